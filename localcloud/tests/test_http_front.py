"""The HTTP front of a served local cloud (server.py ``Front``, bucket_cors.py): only you reach
your local cloud.

* browsers are answered only from the server's own origin and localhost origins (plus
  ``--allow-origin``): a foreign origin is refused, preflight or simple request, with 403, a
  plain-text reason and no ``Access-Control-Allow-*`` header; the AWS SDKs (no Origin) are not
  affected;
* a ``Host`` other than 127.0.0.1, localhost or [::1] is refused unless named
  (``--allow-host``; DNS rebinding);
* the admin API's state-changing requests take ``application/json`` only;
* a bucket's CORS rule admits its origin, for that bucket's S3 requests only, as S3 does;
* the console's pages carry a Content-Security-Policy of their own files;
* listening beyond loopback needs ``--listen-beyond-loopback``.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from localcloud.cloud import LocalCloud
from localcloud.server import FrontPolicy, LocalCloudServer, host_name, normalize_origin

pytestmark = [pytest.mark.e2e]

TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Resources:
  Site:
    Type: AWS::S3::Bucket
    Properties:
      BucketName: front-site
      CorsConfiguration:  # the template's CORS rule, applied as CloudFormation applies it
        CorsRules:
          - AllowedOrigins: ["http://app.example"]
            AllowedMethods: [GET, PUT]
            AllowedHeaders: ["*"]
            ExposedHeaders: [ETag]
            MaxAge: 600
  Plain:
    Type: AWS::S3::Bucket
    Properties: {BucketName: front-plain}
"""
EVIL = "http://evil.example"
APP = "http://app.example"  # the origin of front-site's CORS rule
PREFLIGHT = {"Access-Control-Request-Method": "PUT"}
SDK_HEADERS = "authorization,x-amz-date,x-amz-content-sha256"


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    template = tmp_path_factory.mktemp("front") / "template.yaml"
    template.write_text(TEMPLATE)
    with LocalCloud(template, stack_name="http-front") as running:
        running.serve(port=0)
        yield running


@pytest.fixture
def port(cloud: LocalCloud) -> int:
    return int(cloud.describe()["endpoint"].rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def named(cloud: LocalCloud) -> Iterator[int]:
    """A second server of the same cloud that names a host and an origin."""
    server = LocalCloudServer(
        cloud,
        "127.0.0.1",
        0,
        FrontPolicy.build(
            [EVIL], ["myhost.test", "*.localhost"], environ={"LOCALCLOUD_ALLOWED_ORIGINS": ""}
        ),
    )
    server.start()
    yield server.port
    server.shutdown()


def call(
    port: int,
    method: str,
    path: str,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> tuple[int, dict[str, str], str]:
    """One raw request (``Host`` as given, else 127.0.0.1:port): status, headers, body."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest(method, path, skip_host="Host" in (headers or {}))
        for key, value in (headers or {}).items():
            connection.putheader(key, value)
        connection.putheader("Content-Length", str(len(body or b"")))
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode()
    finally:
        connection.close()


def cors_headers(headers: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower().startswith("access-control-")}


def s3_client(port: int, origin: str | None = None) -> Any:
    """boto3 against the served endpoint; with ``origin``, every request carries it (as a
    page's SDK would)."""
    s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1")
    if origin:

        def add_origin(request: Any, **_: Any) -> None:
            request.headers["Origin"] = origin

        s3.meta.events.register("before-send.s3", add_origin)
    return s3


# --- origins ---------------------------------------------------------------------------------
def test_a_foreign_preflight_is_refused_without_cors_headers(port: int) -> None:
    for path in ("/", "/front-plain/k", "/_localcloud/faults", "/_localcloud/console/"):
        status, headers, body = call(
            port,
            "OPTIONS",
            path,
            {"Origin": EVIL, **PREFLIGHT, "Access-Control-Request-Headers": SDK_HEADERS},
        )
        assert status == 403, path
        assert cors_headers(headers) == {}, path
        assert headers["X-LocalCloud-Refused"] == "origin"
        assert f"comes from a page of {EVIL} (Origin header)" in body
        assert f"--allow-origin {EVIL}" in body


def test_a_foreign_simple_request_is_refused(cloud: LocalCloud, port: int) -> None:
    form = {"Origin": EVIL, "Content-Type": "application/x-www-form-urlencoded"}
    simple = [
        ("GET", "/", {"Origin": EVIL}, None),
        ("POST", "/", form, b"Action=CreateQueue&QueueName=from-evil&Version=2012-11-05"),
        ("POST", "/_localcloud/faults", {"Origin": EVIL, "Content-Type": "text/plain"}, b"{}"),
        ("POST", "/_localcloud/clock", {"Origin": "null"}, b'{"scale": 1}'),
        # an image or script of the page: no Origin, its Referer; or neither, but cross-site
        ("GET", "/front-plain/k", {"Referer": f"{EVIL}/page.html"}, None),
        ("GET", "/", {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}, None),
    ]
    for method, path, headers, body in simple:
        status, answered, text = call(port, method, path, headers, body)
        assert (status, cors_headers(answered)) == (403, {}), (method, path, headers)
        assert text.startswith("localcloud refused this request: it comes from")
    assert "from-evil" not in str(boto3.client("sqs").list_queues().get("QueueUrls", []))
    assert cloud.time_scale == 0.0


def test_the_own_origin_and_localhost_origins_are_answered(port: int) -> None:
    for origin in (
        f"http://127.0.0.1:{port}",
        "http://localhost:3000",
        "https://127.0.0.1",
        "http://[::1]:8080",
    ):
        headers = {"Origin": origin, **PREFLIGHT, "Access-Control-Request-Headers": SDK_HEADERS}
        status, answered, _ = call(port, "OPTIONS", "/", headers)
        assert status == 200, origin
        assert answered["Access-Control-Allow-Origin"] == origin
        status, answered, body = call(port, "GET", "/", {"Origin": origin})
        assert status == 200 and "ListAllMyBucketsResult" in body, origin
    # a link followed from another site's page to the console: it reads nothing back
    navigation = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Referer": EVIL}
    assert call(port, "GET", "/_localcloud/console/", navigation)[0] == 200


def test_boto3_against_the_served_endpoint_works(port: int) -> None:
    s3 = s3_client(port)
    assert {"front-site", "front-plain"} <= {b["Name"] for b in s3.list_buckets()["Buckets"]}
    s3.put_object(Bucket="front-plain", Key="sdk.txt", Body=b"from the SDK")
    assert s3.get_object(Bucket="front-plain", Key="sdk.txt")["Body"].read() == b"from the SDK"
    sqs = boto3.client("sqs", endpoint_url=f"http://localhost:{port}", region_name="us-east-1")
    assert sqs.create_queue(QueueName="front-sdk")["QueueUrl"]


def test_the_endpoint_of_the_functions_environments_logs_no_request(
    cloud: LocalCloud, port: int, caplog: pytest.LogCaptureFixture
) -> None:
    """A served endpoint logs an access line per request; the one a cloud serves for its
    functions' environments (log_requests=False) does not: each of their SDK calls would be
    a line in the terminal of `make demo` or a test run."""
    quiet = cloud.serve(port=0, log_requests=False)
    with caplog.at_level(logging.INFO, logger="werkzeug"):
        s3_client(port).head_bucket(Bucket="front-plain")
        logged = len(caplog.records)
        s3_client(int(quiet.url.rsplit(":", 1)[1])).head_bucket(Bucket="front-plain")
    assert logged == 1, caplog.text
    assert len(caplog.records) == 1, caplog.text


def test_a_connection_is_kept_for_the_next_request(port: int) -> None:
    """HTTP/1.1 keep-alive (server.KeepAliveRequestHandler): requests with a body of known
    length, an ``Expect: 100-continue`` upload among them, share one connection; a chunked
    body is answered and the connection closed, as werkzeug does."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", "/_localcloud/outputs")
        first = connection.getresponse()
        assert first.status == 200 and first.getheader("Connection") is None
        first.read()
        kept = connection.sock
        body = b"x" * 2048
        connection.request("PUT", "/front-plain/kept", body=body,
                           headers={"Expect": "100-continue"})  # fmt: skip
        upload = connection.getresponse()
        assert upload.status == 200, upload.read()
        upload.read()
        connection.request("GET", "/_localcloud/outputs")
        again = connection.getresponse()
        assert again.status == 200 and connection.sock is kept
        again.read()
        connection.request("PUT", "/front-plain/chunked", body=iter([b"ab", b"cd"]),
                           encode_chunked=True)  # fmt: skip
        chunked = connection.getresponse()
        assert chunked.status == 200 and chunked.getheader("Connection") == "close"
        chunked.read()
    finally:
        connection.close()
    s3 = s3_client(port)
    assert s3.get_object(Bucket="front-plain", Key="kept")["Body"].read() == body
    assert s3.get_object(Bucket="front-plain", Key="chunked")["Body"].read() == b"abcd"


def test_a_stopped_server_answers_no_kept_connection(cloud: LocalCloud) -> None:
    """A connection kept open before the server stopped gets no answer after it: a test's
    cached client of an earlier cloud must fail, not reach the cloud that runs now."""
    server = LocalCloudServer(cloud, "127.0.0.1", 0)
    server.start()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.request("GET", "/_localcloud/outputs")
        assert connection.getresponse().read() is not None
        server.shutdown()
        with pytest.raises(ConnectionError):  # RemoteDisconnected or reset, not an answer
            connection.request("GET", "/_localcloud/outputs")
            connection.getresponse()
    finally:
        connection.close()


def test_a_named_origin_is_answered(named: int) -> None:
    status, headers, _ = call(named, "OPTIONS", "/", {"Origin": EVIL, **PREFLIGHT})
    assert (status, headers["Access-Control-Allow-Origin"]) == (200, EVIL)


# --- hosts -----------------------------------------------------------------------------------
def test_a_host_of_another_name_is_refused(port: int) -> None:
    for host in (
        f"evil.example:{port}",
        "evil.example",
        f"front-plain.localhost:{port}",
        f"front-plain.s3.localhost.localstack.cloud:{port}",
        f"127.0.0.2:{port}",
        f"myhost.test:{port}",
        "localhost:80@evil.example",
    ):
        status, headers, body = call(port, "GET", "/", {"Host": host})
        assert (status, headers["X-LocalCloud-Refused"]) == (403, "host"), host
        assert f"--allow-host {host_name(host)}" in body
    for host in (f"127.0.0.1:{port}", "localhost", f"LOCALHOST:{port}", f"[::1]:{port}"):
        assert call(port, "GET", "/", {"Host": host})[0] == 200, host


def test_a_named_host_is_answered_with_virtual_hosted_buckets(named: int) -> None:
    s3_client(named).put_object(Bucket="front-plain", Key="vhost.txt", Body=b"virtual")
    # (moto reads a dotted Host as <bucket>.<domain>: the admin API shows the front let it in)
    status, _, body = call(named, "GET", "/_localcloud/outputs", {"Host": f"myhost.test:{named}"})
    assert status == 200 and "http-front" in body
    virtual = s3_client(named)  # sent to 127.0.0.1, as <bucket>.localhost: names no DNS needs

    def as_virtual_host(request: Any, **_: Any) -> None:
        request.headers["Host"] = f"front-plain.localhost:{named}"
        request.url = request.url.replace("/front-plain/", "/", 1)

    virtual.meta.events.register("before-send.s3", as_virtual_host)
    assert virtual.get_object(Bucket="front-plain", Key="vhost.txt")["Body"].read() == b"virtual"
    assert call(named, "GET", "/", {"Host": "other.test"})[0] == 403


# --- the admin API ---------------------------------------------------------------------------
def test_admin_state_changes_take_json_only(cloud: LocalCloud, port: int) -> None:
    fault = json.dumps(
        {"operations": [{"service": "sqs", "operation": "ListQueues", "code": "X"}]}
    ).encode()
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        status, headers, body = call(
            port, "POST", "/_localcloud/faults", {"Content-Type": content_type}, fault
        )
        assert (status, headers["X-LocalCloud-Refused"]) == (415, "content-type"), content_type
        assert "Content-Type: application/json" in body
    assert call(port, "POST", "/_localcloud/faults", {}, fault)[0] == 415  # a body, no type
    assert "ListQueues" not in json.dumps(cloud.faults.snapshot())
    status, _, body = call(
        port, "POST", "/_localcloud/faults", {"Content-Type": "application/json"}, fault
    )
    assert status == 200 and "ListQueues" in body
    assert call(port, "DELETE", "/_localcloud/faults")[0] == 200  # no body: no type needed
    assert "ListQueues" not in call(port, "GET", "/_localcloud/faults")[2]


# --- a bucket's CORS configuration -----------------------------------------------------------
def test_a_bucket_cors_rule_admits_its_origin_for_that_bucket_only(port: int) -> None:
    headers = {"Origin": APP, **PREFLIGHT, "Access-Control-Request-Headers": SDK_HEADERS}
    status, answered, _ = call(port, "OPTIONS", "/front-site/page.txt", headers)
    assert status == 200
    assert cors_headers(answered) == {
        "Access-Control-Allow-Origin": APP,
        "Access-Control-Allow-Credentials": "true",
        "Access-Control-Allow-Methods": "GET, PUT",
        "Access-Control-Allow-Headers": "authorization, x-amz-date, x-amz-content-sha256",
        "Access-Control-Expose-Headers": "ETag",
        "Access-Control-Max-Age": "600",
    }
    page_sdk = s3_client(port, origin=APP)
    put = page_sdk.put_object(Bucket="front-site", Key="page.txt", Body=b"from the page")
    sent = put["ResponseMetadata"]["HTTPHeaders"]
    assert sent["access-control-allow-origin"] == APP
    assert sent["access-control-expose-headers"] == "ETag"
    got = page_sdk.get_object(Bucket="front-site", Key="page.txt")
    assert got["Body"].read() == b"from the page"
    refused = [
        ("OPTIONS", "/front-plain/page.txt", headers),  # another bucket
        (
            "OPTIONS",
            "/front-site/page.txt",
            {"Origin": APP, "Access-Control-Request-Method": "DELETE"},
        ),
        ("OPTIONS", "/front-site/page.txt", {"Origin": "http://other.example", **PREFLIGHT}),
        ("GET", "/", {"Origin": APP}),  # ListBuckets is no bucket's
        ("GET", "/front-plain/sdk.txt", {"Origin": APP}),
    ]
    for method, path, sent_headers in refused:
        status, answered, _ = call(port, method, path, sent_headers)
        assert (status, cors_headers(answered)) == (403, {}), (method, path, sent_headers)
    method, path, sent_headers = refused[1]
    assert (
        "No CORS rule of bucket front-site admits DELETE"
        in call(port, method, path, sent_headers)[2]
    )
    with pytest.raises(ClientError) as raised:
        page_sdk.list_objects_v2(Bucket="front-plain")
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    # the bucket's path under another service's signature is not S3's request
    sqs_signed = {
        "Origin": APP,
        "Authorization": "AWS4-HMAC-SHA256 Credential=k/20250101/us-east-1/sqs/aws4_request, "
        "SignedHeaders=host, Signature=0",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    body_sqs = b"Action=CreateQueue&QueueName=via-bucket&Version=2012-11-05"
    assert call(port, "POST", "/front-site", sqs_signed, body_sqs)[0] == 403


# --- the console's pages ---------------------------------------------------------------------
def test_console_pages_carry_a_content_security_policy(port: int) -> None:
    for path in (
        "/_localcloud/console/",
        "/_localcloud/console/console.js",
        "/_localcloud/console",
    ):
        status, headers, _ = call(port, "GET", path)
        assert status in (200, 308), path
        policy = headers["Content-Security-Policy"]
        assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["X-Frame-Options"] == "DENY"
    _, headers, _ = call(port, "GET", "/_localcloud/outputs")
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    _, _, page = call(port, "GET", "/_localcloud/console/")
    assert re.search(r"<script(?![^>]*\ssrc=)", page) is None  # no inline script
    assert re.search(r"<style|\sstyle=|\son[a-z]+=", page) is None  # nor style, nor handler


# --- the policy, the listening address, the command line -------------------------------------
def test_the_policy_reads_flags_and_environment() -> None:
    policy = FrontPolicy.build(
        ["HTTP://App.Example:80/"],
        ["MyHost.Lan:4566", "*.localhost", "::1"],
        environ={
            "LOCALCLOUD_ALLOWED_ORIGINS": "https://a.example:443, http://b.example:8080",
            "LOCALCLOUD_ALLOWED_HOSTS": "c.lan",
        },
    )
    assert policy.origins == {"http://app.example", "https://a.example", "http://b.example:8080"}
    assert policy.hosts == {"myhost.lan", ".localhost", "[::1]", "c.lan"}
    assert policy.host_allowed("bucket.localhost") and not policy.host_allowed("localhost.evil")
    assert not policy.any_origin and policy.warnings("127.0.0.1") == []
    loud = FrontPolicy.build(environ={"LOCALCLOUD_ALLOW_ANY_ORIGIN": "1"})
    assert loud.any_origin and "origin checks are off" in loud.warnings("127.0.0.1")[0]
    for bad in ("evil.example", "http://x.example/path", "ftp://x.example"):
        with pytest.raises(ValueError, match="is not an origin"):
            normalize_origin(bad)
    with pytest.raises(ValueError, match="is not a host name"):
        FrontPolicy.build(hosts=["bad/name"], environ={})


def test_listening_beyond_loopback_needs_the_flag(cloud: LocalCloud) -> None:
    with pytest.raises(ValueError, match="--listen-beyond-loopback"):
        LocalCloudServer(cloud, "0.0.0.0", 0, FrontPolicy()).start()  # noqa: S104
    policy = FrontPolicy(beyond_loopback=True)
    assert "beyond loopback" in policy.warnings("0.0.0.0")[0]  # noqa: S104
    server = LocalCloudServer(cloud, "0.0.0.0", 0, policy)  # noqa: S104
    server.start()
    try:
        status, _, _ = call(server.port, "GET", "/", {"Host": f"localhost:{server.port}"})
        assert status == 200
    finally:
        server.shutdown()


NETWORK = ["--host", "0.0.0.0", "--port", "0"]  # noqa: S104


def test_the_command_refuses_a_network_address_before_the_deploy(tmp_path: Path) -> None:
    template = tmp_path / "template.yaml"
    template.write_text(TEMPLATE)
    done = subprocess.run(
        [sys.executable, "-m", "localcloud.cli", "up", "--template", str(template), *NETWORK],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "AWS_DEFAULT_REGION": "us-east-1"},
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "--listen-beyond-loopback" in done.stderr
    assert "deploying" not in done.stderr
