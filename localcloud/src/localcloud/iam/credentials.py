"""Temporary credentials of role sessions, as STS issues them, and who each access key is.

On AWS a request is judged by its signature: the access key id names a principal. An
assumed-role session's key is a temporary one (``ASIA`` and 16 upper-case letters or digits,
with a secret and a session token); STS knows which role and session it belongs to, and IAM
judges the request as ``arn:aws:sts::<account>:assumed-role/<role>/<session>``.
:class:`CredentialsRegistry` is that knowledge for one local cloud (``Authorizer.credentials``,
its ``caller_of`` the :class:`~localcloud.iam.enforcement.Caller` of a key; an unknown key's
caller is whoever acts today: the thread's principal, else the administrator).

Not modelled: expiry (a session's credentials stay valid while the cloud runs; AWS answers
``ExpiredToken`` after ``Expiration``), session policies and session tags.
"""

from __future__ import annotations

import datetime
import re
import secrets
import string
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from localcloud.iam.policy import Principal

__all__ = ["CREDENTIAL", "CredentialsRegistry", "Session", "access_key_of"]

_KEY_ALPHABET = string.ascii_uppercase + string.digits
_SECRET_ALPHABET = string.ascii_letters + string.digits + "+/"
#: the SigV4 credential scope: <access key id>/<date>/<region>/<service>/aws4_request
CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/\d{8}/([^/]+)/([^/]+)/aws4_request")
_QUERY_CREDENTIAL = re.compile(r"([^/]+)/\d{8}/([^/]+)/([^/]+)/aws4_request")


def access_key_of(authorization: str, query_credential: str = "") -> tuple[str, str, str] | None:
    """(access key id, region, signing name) of a SigV4 request: its ``Authorization``
    header's ``Credential=`` or, for a presigned URL, its ``X-Amz-Credential`` parameter."""
    found = CREDENTIAL.search(authorization or "")
    if found is None and query_credential:
        found = _QUERY_CREDENTIAL.fullmatch(query_credential.strip())
    return (found.group(1), found.group(2), found.group(3)) if found else None


@dataclass(frozen=True)
class Session:
    """One role session's temporary credentials."""

    access_key_id: str
    secret_access_key: str
    session_token: str
    expiration: datetime.datetime
    role_arn: str
    session_name: str

    @property
    def principal(self) -> Principal:
        return Principal(arn=self.role_arn, session=self.session_name)


class CredentialsRegistry:
    """The role sessions of one local cloud, by access key id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}

    def issue(self, role_arn: str, session_name: str, *, duration: int = 3600) -> dict[str, Any]:
        """New credentials of a session of ``role_arn`` (``AccessKeyId``, ``SecretAccessKey``,
        ``SessionToken``, ``Expiration``), valid ``duration`` seconds (STS's default: 1 h)."""
        key = ""
        while not key or key in self._sessions:
            key = "ASIA" + "".join(secrets.choice(_KEY_ALPHABET) for _ in range(16))
        now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        credentials = {
            "AccessKeyId": key,
            "SecretAccessKey": "".join(secrets.choice(_SECRET_ALPHABET) for _ in range(40)),
            "SessionToken": secrets.token_urlsafe(96),
            "Expiration": now + datetime.timedelta(seconds=duration),
        }
        self.register(credentials, role_arn, session_name)
        return credentials

    def register(self, credentials: Mapping[str, Any], role_arn: str, session_name: str) -> None:
        """Record credentials made elsewhere (moto's AssumeRole) as a session of ``role_arn``."""
        session = Session(
            access_key_id=str(credentials["AccessKeyId"]),
            secret_access_key=str(credentials["SecretAccessKey"]),
            session_token=str(credentials.get("SessionToken") or ""),
            expiration=credentials["Expiration"],
            role_arn=role_arn,
            session_name=session_name,
        )
        with self._lock:
            self._sessions[session.access_key_id] = session

    def session(self, access_key_id: str | None) -> Session | None:
        return self._sessions.get(access_key_id) if access_key_id else None
