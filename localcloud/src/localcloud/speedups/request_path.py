"""The in-process request path (boto3 -> botocore -> moto), without work nobody checks.

Every AWS call in the local cloud goes through botocore and moto's request/response layers:
about 2 ms of CPU per call, several times the work of the call itself for a GetItem. These
pieces of it are waste here (line numbers: botocore 1.43, moto 5.2.x):

* SigV4 signing (botocore/auth.py:430 ``SigV4Auth.add_auth``): moto does not verify
  signatures. The request keeps its date and token headers and an Authorization header with
  the real credential scope (moto reads the access key and region from it); only the
  HMAC chain over the canonical request is skipped, and the signature is zeros. S3's signer
  (``S3SigV4Auth``, which also sets the payload hash headers moto reads) is left alone;
* ``BaseResponse.setup_class`` (moto/core/responses.py:451) lists the response class's
  methods with ``inspect.getmembers`` on every request. The list is cached per class;
* ``S3Backend._url_module`` (moto/s3/models.py:1868) re-imports ``moto.s3.urls`` on every
  S3 request, for environment variables that do not change while the local cloud runs.
  The module is reloaded once, at install.
* ``BackendDict.__getitem__`` (moto/core/base_backend.py:349), on every backend lookup, takes
  a lock and searches the list of used services with a custom ``__eq__``. A present account
  is returned directly: an account is only ever added by that method, which also registers
  the service, and moto's reset clears both together.
* moto's response serializer (moto/core/serialize.py:357 ``ResponseSerializer.get_value``)
  asks an ``AttributePicker`` for every member of every shape, and the picker instantiates
  its six alias providers each time to list the keys it tries: a three-attribute GetItem
  made 32 picker calls (a quarter of the call's CPU under cProfile). For a plain ``dict``
  the keys tried depend only on the shape (with its ``parent``, always the structure that
  lists it) and the member name: there are no ``Meta`` aliases and the class name is always
  ``dict``. So they are listed once per (picker class, shape, member), then tried in the
  same order. Objects, pickers with response transformers and custom alias providers take
  moto's path;
* botocore rebuilds the User-Agent header on every request, character by character
  (botocore/useragent.py:142 ``sanitize_user_agent_string_component``, a pure function of
  its arguments); its results are memoised.
* on the served path (``localcloud up``, function environments), moto's dispatcher looks for
  the request's service among ``backends.list_of_moto_modules()`` (moto/backends.py:189), a
  listing of moto's package directory with a ``stat`` of each of its ~200 entries, on every
  request: about 1.5 ms of a served call's 4.5 ms of server CPU. The listing is made once.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import botocore.auth as botocore_auth
import botocore.useragent as botocore_useragent
import moto.backends as moto_backends
import moto.core.responses as moto_responses
import moto.s3.urls as s3_urls
from botocore.auth import SigV4Auth
from moto.core import serialize as moto_serialize
from moto.core.base_backend import BackendDict
from moto.core.utils import get_value as _moto_get_value
from moto.s3.models import S3Backend

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_ORIG_ADD_AUTH = SigV4Auth.add_auth
_ORIG_GETITEM = BackendDict.__getitem__
_ORIG_SANITIZE_USER_AGENT_STRING_COMPONENT = botocore_useragent.sanitize_user_agent_string_component
_ORIG_METHOD_NAMES_FROM_CLASS = moto_responses.method_names_from_class
_ORIG_GET_VALUE = moto_serialize.ResponseSerializer.get_value
_ORIG_LIST_OF_MOTO_MODULES = moto_backends.list_of_moto_modules

_ZERO_SIGNATURE = "0" * 64


def _add_auth(self: Any, request: Any) -> None:
    # S3's and other special signers, and missing credentials (NoCredentialsError): as botocore.
    if self.__class__ is not SigV4Auth or self.credentials is None:
        _ORIG_ADD_AUTH(self, request)
        return
    request.context["timestamp"] = botocore_auth.get_current_datetime().strftime(  # type: ignore[attr-defined]
        botocore_auth.SIGV4_TIMESTAMP
    )
    self._modify_request_before_signing(request)  # type: ignore[attr-defined]
    request.headers["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={self.scope(request)}, "
        f"SignedHeaders=host;x-amz-date, Signature={_ZERO_SIGNATURE}"
    )


@functools.cache
def _method_names(clazz: type) -> list[str]:
    return list(_ORIG_METHOD_NAMES_FROM_CLASS(clazz))


@functools.cache
def _moto_modules() -> tuple[str, ...]:
    return tuple(_ORIG_LIST_OF_MOTO_MODULES())


def _backend(self: BackendDict[Any], account_id: str) -> Any:
    if dict.__contains__(self, account_id):
        return dict.__getitem__(self, account_id)
    return _ORIG_GETITEM(self, account_id)


_PICKERS = (moto_serialize.AttributePicker, moto_serialize.XFormedAttributePicker)
_MISSING = moto_serialize.MISSING
# (picker class, id(shape), key) -> (shape, the keys the picker tries for a dict, in order)
_PICKED_KEYS: dict[tuple[type, int, str], tuple[Any, tuple[str, ...]]] = {}


def _keys_for_dict(picker: Any, shape: Any, key: str) -> tuple[str, ...]:
    cache_key = (type(picker), id(shape), key)
    hit = _PICKED_KEYS.get(cache_key)
    if hit is not None and hit[0] is shape:
        return hit[1]
    context = moto_serialize.AttributePickerContext(obj={}, key=key, shape=shape)
    keys = tuple(picker.get_possible_keys(context))
    _PICKED_KEYS[cache_key] = (shape, keys)
    return keys


def _serializer_get_value(self: Any, value: Any, key: str, shape: Any) -> Any:
    picker = self._value_picker
    if (
        type(value) is not dict
        or type(picker) not in _PICKERS
        or picker.response_transformers
        or picker.alias_providers is not moto_serialize.DEFAULT_ALIAS_PROVIDERS
    ):
        return _ORIG_GET_VALUE(self, value, key, shape)
    for possible_key in _keys_for_dict(picker, shape, key):
        found = _moto_get_value(value, possible_key, _MISSING)
        if found is not _MISSING:
            return found
    return None


@functools.lru_cache(maxsize=4096)
def _sanitize_ua(raw_str: str, allow_hash: bool) -> str:
    return str(_ORIG_SANITIZE_USER_AGENT_STRING_COMPONENT(raw_str, allow_hash))


def _close() -> None:
    _method_names.cache_clear()
    _PICKED_KEYS.clear()
    _sanitize_ua.cache_clear()


def _build(rt: Runtime) -> Targets:
    importlib.reload(s3_urls)  # what moto does per S3 request, once
    rt.on_close(_close)
    return {
        (SigV4Auth, "add_auth"): _add_auth,
        (moto_responses, "method_names_from_class"): _method_names,
        (S3Backend, "_url_module"): property(lambda backend: s3_urls),
        (BackendDict, "__getitem__"): _backend,
        (moto_serialize.ResponseSerializer, "get_value"): _serializer_get_value,
        (botocore_useragent, "sanitize_user_agent_string_component"): _sanitize_ua,
        (moto_backends, "list_of_moto_modules"): _moto_modules,
    }


PATCHES = [
    Patch(
        name="request-path",
        kind=Kind.SPEEDUP,
        reason="The in-process request path skips SigV4 HMACs moto never checks and caches "
        "per-class lookups: ~2 ms of CPU per AWS call otherwise; a served call does not list "
        "moto's package directory (~1.5 ms).",
        test="tests/e2e/test_localcloud_moto_speedups.py"
        "::test_responses_carry_every_dynamodb_type_and_nested_shape",
        build=_build,
    )
]
