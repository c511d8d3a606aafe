"""Speedup: a KMS key's asymmetric key pair is generated on first use, not when it is made.

moto makes an RSA (or EC) private key for every KMS key, SYMMETRIC_DEFAULT ones included
(kms/models.py ``Key.__init__``: ``generate_private_key(self.key_spec)``): ~55 ms of CPU per
RSA key, two keys per deploy of the app's template. Only Sign, Verify and GetPublicKey use
it. Here ``Key.__init__`` gets a stand-in that generates moto's own key pair (moto's
``generate_private_key``, same key spec) the first time one of them asks for it, and then
delegates to it: the same signatures, verifications and public keys, later.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from moto.kms import models as kms_models
from moto.kms.utils import AbstractPrivateKey

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "LazyPrivateKey"]

_LOCK = threading.Lock()  # generation is rare: one lock for every key (and copyable keys)


class LazyPrivateKey(AbstractPrivateKey):
    """moto's private key for ``key_spec``, generated (once) when first used."""

    def __init__(self, key_spec: str, generate: Callable[[str], AbstractPrivateKey]) -> None:
        self.key_spec = key_spec
        self._generate = generate
        self._key: AbstractPrivateKey | None = None

    @property
    def generated(self) -> bool:
        return self._key is not None

    def _real(self) -> AbstractPrivateKey:
        key = self._key
        if key is None:
            with _LOCK:
                if self._key is None:
                    self._key = self._generate(self.key_spec)
                key = self._key
        return key

    def sign(self, message: bytes, signing_algorithm: str) -> bytes:
        return self._real().sign(message, signing_algorithm)

    def verify(self, message: bytes, signature: bytes, signing_algorithm: str) -> bool:
        return self._real().verify(message, signature, signing_algorithm)

    def public_key(self) -> bytes:
        return self._real().public_key()

    def __getattr__(self, name: str) -> Any:
        # anything else moto's key classes have (e.g. ``private_key``) comes from the real one
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._real(), name)


def _build(rt: Runtime) -> Targets:
    generate = kms_models.generate_private_key
    return {
        (kms_models, "generate_private_key"): lambda key_spec: LazyPrivateKey(key_spec, generate)
    }


PATCHES = [
    Patch(
        name="kms-lazy-private-key",
        kind=Kind.SPEEDUP,
        reason="A KMS key's RSA/EC key pair is generated when Sign, Verify or GetPublicKey "
        "first needs it, not for every key (~55 ms of CPU each, symmetric keys included).",
        test="tests/e2e/test_localcloud_moto_speedups.py::"
        "test_kms_sign_verify_and_public_key_for_rsa_and_ecc_keys",
        build=_build,
    )
]
