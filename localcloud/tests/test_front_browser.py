"""The HTTP front (server.py ``Front``) against a real browser: a page of another origin, served
by a second tiny http.server, tries to list the buckets, put an object, create a queue and arm
a fault through the local cloud's endpoint, and is refused, by the server and not only by the
browser's CORS check (nothing it asked for happened); a page of a localhost origin is answered;
the console works under its Content-Security-Policy.

The foreign origin is http://evil.example:<port>, which Chromium resolves to 127.0.0.1
(``--host-resolver-rules``), as a DNS name of an attacker's would. Playwright (Python) drives
the system's Chromium (console/testing.py); skipped, with the reason, without them.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from localcloud.cloud import LocalCloud
from localcloud.console.testing import ARGS, TIMEOUT_MS, chromium, skip_reason

if (why := skip_reason()) is not None:
    pytest.skip(why, allow_module_level=True)

from playwright.sync_api import Browser, Page, expect, sync_playwright

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Resources:
  Bucket:
    Type: AWS::S3::Bucket
    Properties: {BucketName: browser-front}
"""
FAULT = {"operations": [{"service": "sqs", "operation": "ListQueues", "code": "Evil"}]}
SIGNED = "AWS4-HMAC-SHA256 Credential=k/20250101/us-east-1/{}/aws4_request, SignedHeaders=host, "
# what the page tries, each in a fetch of its own: "blocked" (the fetch failed: CORS) or, for
# no-cors requests (sent without asking, their answer unreadable), "sent"
ATTEMPTS = """async ([endpoint, fault, s3, sqs]) => {
  const attempt = async (url, init) => {
    try {
      const response = await fetch(url, init);
      return response.type === "opaque" ? "sent" : "read " + response.status;
    } catch (e) {
      return "blocked";
    }
  };
  return {
    listBuckets: await attempt(endpoint + "/"),
    putObject: await attempt(endpoint + "/browser-front/evil.txt", {
      method: "PUT", body: "evil", headers: {authorization: s3, "x-amz-date": "20250101T000000Z"}}),
    armFault: await attempt(endpoint + "/_localcloud/faults", {
      method: "POST", body: JSON.stringify(fault), headers: {"content-type": "application/json"}}),
    armFaultSimple: await attempt(endpoint + "/_localcloud/faults", {
      method: "POST", mode: "no-cors", body: JSON.stringify(fault),
      headers: {"content-type": "text/plain"}}),
    createQueueSimple: await attempt(endpoint + "/", {
      method: "POST", mode: "no-cors", body: "Action=CreateQueue&QueueName=evil&Version=2012-11-05",
      headers: {"content-type": "application/x-www-form-urlencoded", authorization: sqs}}),
  };
}"""


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloud]:
    template = tmp_path_factory.mktemp("front-browser") / "template.yaml"
    template.write_text(TEMPLATE)
    with LocalCloud(template, stack_name="front-browser") as running:
        running.serve(port=0)
        yield running


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A second server (another port: another origin) with one blank page; its port."""
    root: Path = tmp_path_factory.mktemp("pages")
    (root / "index.html").write_text("<!doctype html><title>another site</title><p>hello</p>")
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium(),
            args=[*ARGS, "--host-resolver-rules=MAP evil.example 127.0.0.1"],
            headless=True,
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    yield context.new_page()
    context.close()


def attempts(page: Page, url: str, endpoint: str) -> dict[str, str]:
    page.goto(url)
    args = [endpoint, FAULT, SIGNED.format("s3"), SIGNED.format("sqs")]
    result: dict[str, str] = page.evaluate(ATTEMPTS, args)
    return result


def test_a_page_of_another_origin_is_refused(cloud: LocalCloud, pages: int, page: Page) -> None:
    endpoint = cloud.describe()["endpoint"]
    tried = attempts(page, f"http://evil.example:{pages}/", endpoint)
    assert tried == {
        "listBuckets": "blocked",
        "putObject": "blocked",
        "armFault": "blocked",
        "armFaultSimple": "sent",
        "createQueueSimple": "sent",
    }
    # what was sent without asking was refused by the server: nothing happened
    assert "Evil" not in json.dumps(cloud.faults.snapshot())
    assert "evil" not in str(boto3.client("sqs").list_queues().get("QueueUrls", []))
    with pytest.raises(ClientError):
        boto3.client("s3").head_object(Bucket="browser-front", Key="evil.txt")


def test_a_page_of_a_localhost_origin_is_answered(
    cloud: LocalCloud, pages: int, page: Page
) -> None:
    endpoint = cloud.describe()["endpoint"]
    page.goto(f"http://localhost:{pages}/")
    listed: Any = page.evaluate("async (url) => (await fetch(url)).text()", endpoint + "/")
    assert "browser-front" in listed


def test_the_console_runs_under_its_content_security_policy(cloud: LocalCloud, page: Page) -> None:
    violations: list[str] = []
    page.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(cloud.describe()["endpoint"] + "/_localcloud/console/")
    expect(page.locator("#refresh")).to_contain_text("updated")
    expect(page.locator("#app")).not_to_contain_text("Loading")
    assert (violations, errors) == ([], [])
