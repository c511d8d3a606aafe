"""A bucket's CORS configuration answers browsers for that bucket, as S3 does.

The HTTP front (server.py) refuses pages of origins it does not admit; before it does, a
request whose origin is foreign comes here: when it is an S3 request (moto would route it to
S3) for a bucket with a CORS configuration (PutBucketCors), the first rule that admits its
origin, method and, for a preflight, every requested header, answers it as S3 would:

* a preflight (``OPTIONS`` with ``Access-Control-Request-Method``) is answered here, 200 with
  ``Access-Control-Allow-Origin`` (``*`` for a rule of ``*``, else the origin with
  ``Access-Control-Allow-Credentials: true``), ``-Allow-Methods`` (the rule's),
  ``-Allow-Headers`` (those requested), ``-Expose-Headers``, ``-Max-Age`` and ``Vary``;
* any other request goes to moto, its answer carrying the rule's headers instead of moto's
  (moto's flask-cors admits every origin, and its own S3 CORS reads all the rules at once).

No rule admitting it: nothing here, and the front refuses the request (S3 would refuse the
preflight and leave the response without CORS headers).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from werkzeug.wrappers import Request, Response

__all__ = ["answer", "bucket_name", "matching_rule"]

WsgiApp = Callable[[dict[str, Any], Any], Iterable[bytes]]
_VARY = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"


def answer(
    app: WsgiApp, dispatcher: Any, environ: dict[str, Any], origin: str
) -> tuple[WsgiApp | None, str]:
    """``(a WSGI app answering the request with its bucket's CORS rule, "")`` or ``(None, a
    sentence for the refusal)``."""
    try:
        service = getattr(dispatcher.get_application(environ), "service", None)
    except Exception:  # moto could not route it: not an S3 request then
        return None, ""
    name = bucket_name(environ) if service == "s3" else None
    bucket = _bucket(name) if name else None
    if bucket is None:
        return None, ""
    requested = environ.get("HTTP_ACCESS_CONTROL_REQUEST_METHOD")
    preflight = environ.get("REQUEST_METHOD") == "OPTIONS" and bool(requested)
    method = str(requested if preflight else environ["REQUEST_METHOD"]).upper()
    asked = _list(environ.get("HTTP_ACCESS_CONTROL_REQUEST_HEADERS")) if preflight else []
    rule = matching_rule(bucket.cors, origin, method, asked)
    if rule is None:
        return None, (
            f" No CORS rule of bucket {name} admits {method} from it either"
            + (f" with the headers {', '.join(asked)}" if asked else "")
            + " (PutBucketCors)."
        )
    headers = _headers(rule, origin, asked)
    if preflight:
        return Response(status=200, headers=headers), ""

    def with_rule(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        def start(status: str, response_headers: list[tuple[str, str]], *exc: Any) -> Any:
            kept = [
                (key, value)
                for key, value in response_headers
                if not key.lower().startswith("access-control-") and key.lower() != "vary"
            ]
            return start_response(status, kept + headers, *exc)

        return app(environ, start)

    return with_rule, ""


def bucket_name(environ: Mapping[str, Any]) -> str | None:
    """The bucket an S3 request addresses, as moto reads it: virtual-hosted style
    (``<bucket>.<host>``) when moto takes the Host so, else the path's first segment."""
    from moto.s3.responses import S3Response
    from moto.s3.utils import bucket_name_from_url

    request = Request(dict(environ))
    if S3Response.subdomain_based_buckets(request):
        name: str | None = bucket_name_from_url(request.url)
        return name
    return str(environ.get("PATH_INFO") or "").lstrip("/").split("/", 1)[0] or None


def _bucket(name: str) -> Any:
    from moto.s3.models import s3_backends

    backends = [b for account in list(s3_backends.values()) for b in list(account.values())]
    return next((b.buckets[name] for b in backends if name in b.buckets), None)


def matching_rule(rules: Iterable[Any], origin: str, method: str, asked: list[str]) -> Any:
    """The first of a bucket's ``CorsRule``s that admits ``origin`` (``*`` wildcards),
    ``method`` and every header in ``asked`` (case-insensitive, ``*`` wildcards)."""
    for rule in rules:
        origins = rule.allowed_origins or []
        allowed_headers = [h.lower() for h in rule.allowed_headers or []]
        if (
            any(_matches(pattern, origin) for pattern in origins)
            and method in (rule.allowed_methods or [])
            and all(any(_matches(p, h.lower()) for p in allowed_headers) for h in asked)
        ):
            return rule
    return None


def _matches(pattern: str, value: str) -> bool:
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, value) is not None


def _list(header: str | None) -> list[str]:
    return [item.strip().lower() for item in (header or "").split(",") if item.strip()]


def _headers(rule: Any, origin: str, asked: list[str]) -> list[tuple[str, str]]:
    star = "*" in (rule.allowed_origins or [])
    age = rule.max_age_seconds
    headers = [
        ("Vary", _VARY),
        ("Access-Control-Allow-Origin", "*" if star else origin),
        ("Access-Control-Allow-Credentials", "" if star else "true"),
        ("Access-Control-Allow-Methods", ", ".join(rule.allowed_methods)),
        ("Access-Control-Allow-Headers", ", ".join(asked)),
        ("Access-Control-Expose-Headers", ", ".join(rule.exposed_headers or [])),
        ("Access-Control-Max-Age", "" if age is None else str(age)),
    ]
    return [(name, value) for name, value in headers if value]
