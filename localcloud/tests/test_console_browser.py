"""The console's pages (localcloud/console/static/) in a real browser: Playwright (Python)
driving the system's Chromium (Debian's ``chromium`` package, or ``LOCALCLOUD_CHROMIUM``);
Playwright's own browser downloads are never used.

The cloud serves the published s3-eventbridge-sfn pattern; its executions run MockConfigFile
test cases (features/mock_config.py), as in test_console_data.py, so no image is needed. The
pages are checked against the definition itself: every state a node (``rect[data-node-id]``),
every transition an edge (``path[data-source][data-target][data-kind]``).

Skipped, with the reason, when Playwright is not installed or no Chromium is found.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from test_published_patterns import served_pattern

from localcloud.cloud import LocalCloud
from localcloud.console.testing import launch, skip_reason

if (why := skip_reason()) is not None:
    pytest.skip(why, allow_module_level=True)

from playwright.sync_api import Browser, Page, expect, sync_playwright

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

LABELS = {"Labels": [{"Name": "Cat", "Confidence": 99.0, "Parents": []}]}
# an object key with a space, "+", "%" and non-ASCII: shown as it is, in the list and the page
KEY = "photos/été 2024+100%/chat n°1.jpg"
INPUT = json.dumps({"detail": {"bucket": {"name": "b"}, "object": {"key": KEY}}})
TIMEOUT_MS = 15_000
TIMES = "\N{MULTIPLICATION SIGN}"  # the page marks a state retried twice "<TIMES>2"
RETRY_MACHINE = "ConsoleBrowserRetry"
RETRY_DEFINITION = {
    "StartAt": "Detect",
    "States": {
        "Detect": {
            "Type": "Task",
            "Resource": "arn:aws:states:::aws-sdk:rekognition:detectLabels",
            "Parameters": {"Image": {"S3Object": {"Bucket": "b", "Name": "k"}}},
            "Retry": [{"ErrorEquals": ["Rekognition.ThrottlingException"], "MaxAttempts": 3}],
            "End": True,
        }
    },
}


def mock_config(machine_name: str) -> dict[str, Any]:
    return {
        "StateMachines": {
            machine_name: {
                "TestCases": {
                    "CatFound": {"DetectLabels": "Labels"},
                    "Denied": {"DetectLabels": "Denied"},
                }
            },
            RETRY_MACHINE: {"TestCases": {"Throttled": {"Detect": "ThrottledTwice"}}},
        },
        "MockedResponses": {
            "Labels": {"0": {"Return": LABELS}},
            "ThrottledTwice": {
                "0-1": {"Throw": {"Error": "Rekognition.ThrottlingException", "Cause": "slow"}},
                "2": {"Return": LABELS},
            },
            "Denied": {
                "0": {"Throw": {"Error": "Rekognition.AccessDeniedException", "Cause": "denied"}}
            },
        },
    }


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with served_pattern(
        "console-browser", {RETRY_MACHINE: RETRY_DEFINITION}, mock_config
    ) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = launch(playwright)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert not errors, f"script errors on the page: {errors}"


def console(cloud: LocalCloud, fragment: str = "/", query: str = "") -> str:
    return f"{cloud.describe()['endpoint']}/_localcloud/console/{query}#{fragment}"


def machine(cloud: LocalCloud) -> str:
    return str(cloud.outputs["CatDetectorStateMachine"])


def run(cloud: LocalCloud, test_case: str, machine_arn: str | None = None) -> str:
    sfn = boto3.client("stepfunctions")
    target = f"{machine_arn or machine(cloud)}#{test_case}"
    started = sfn.start_execution(stateMachineArn=target, input=INPUT)
    cloud.settle()
    return str(started["executionArn"])


def api(cloud: LocalCloud, route: str, **query: str) -> Any:
    url = f"{cloud.describe()['endpoint']}/_localcloud/console/api/{route}"
    url += "?" + urllib.parse.urlencode(query)
    with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 (http://127.0.0.1)
        return json.loads(response.read())


def definition_of(cloud: LocalCloud) -> dict[str, Any]:
    sfn = boto3.client("stepfunctions")
    text = sfn.describe_state_machine(stateMachineArn=machine(cloud))["definition"]
    return dict(json.loads(text))


def node(page: Page, node_id: str) -> Any:
    return page.locator(f'rect[data-node-id="{node_id}"]')


# --- the files ---------------------------------------------------------------------------
def test_the_pages_are_served_with_their_content_types(cloud: LocalCloud) -> None:
    base = f"{cloud.describe()['endpoint']}/_localcloud/console"
    expected = {
        "/": "text/html",
        "/lib.js": "text/javascript",
        "/console.js": "text/javascript",
        "/console.css": "text/css",
        "/vendor/dagre.min.js": "text/javascript",
        "/vendor/LICENSE": "text/plain",
    }
    for path, content_type in expected.items():
        with urllib.request.urlopen(base + path, timeout=30) as response:  # noqa: S310
            assert response.headers["Content-Type"].startswith(content_type), path
            assert response.read()
    with urllib.request.urlopen(base, timeout=30) as response:  # noqa: S310 (redirected)
        assert response.url == base + "/"
    for missing in ("/nothing.js", "/../server.py", "/%2e%2e/server.py", "/vendor/../../data.py"):
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(base + missing, timeout=30)  # noqa: S310
        assert raised.value.code == 404, missing


# --- the pages ---------------------------------------------------------------------------
def test_the_list_and_the_machine_graph_show_every_state_and_transition(
    cloud: LocalCloud, page: Page
) -> None:
    page.goto(console(cloud))
    link = page.locator(f'tr[data-arn="{machine(cloud)}"] a')
    expect(link).to_be_visible()
    link.click()
    expect(page).to_have_url(console(cloud, "/machine/" + urllib.parse.quote(machine(cloud), "")))

    drawn = api(cloud, "state-machines")
    graph = next(m["graph"] for m in drawn if m["arn"] == machine(cloud))
    definition = definition_of(cloud)
    expect(page.locator("rect[data-node-id]")).to_have_count(len(graph["nodes"]))
    for name in definition["States"]:
        expect(node(page, f"States.{name}")).to_have_count(1)
    expect(page.locator("path[data-source]")).to_have_count(len(graph["edges"]))
    for edge in graph["edges"]:
        selector = (
            f'path[data-source="{edge["source"]}"][data-target="{edge["target"]}"]'
            f'[data-kind="{edge["kind"]}"]'
        )
        expect(page.locator(selector).first).to_be_attached()


def test_a_successful_execution_highlights_its_path(cloud: LocalCloud, page: Page) -> None:
    arn = run(cloud, "CatFound")
    shown = api(cloud, "execution", arn=arn)
    page.goto(console(cloud, "/execution/" + urllib.parse.quote(arn, "")))
    expect(page.locator("#execution-status")).to_have_text("SUCCEEDED")
    for node_id in shown["visitedNodeIds"]:
        expect(node(page, node_id)).to_have_class("node type-" + _type(shown, node_id) + " visited")
    expect(page.locator("rect.failed")).to_have_count(0)
    expect(page.locator(".subject").first).to_have_text(KEY)
    expect(page.locator("#path > li")).to_have_count(len(shown["path"]))
    expect(page.locator("#path > li").first).to_contain_text("DetectLabels")
    expect(page.locator("#path > li pre").first).to_contain_text(KEY)
    expect(page.locator("table.history tbody tr")).to_have_count(shown["eventCount"])


def _type(shown: dict[str, Any], node_id: str) -> str:
    return str(next(n["type"] for n in shown["graph"]["nodes"] if n["id"] == node_id))


def test_a_failed_execution_marks_its_failed_state(cloud: LocalCloud, page: Page) -> None:
    arn = run(cloud, "Denied")
    page.goto(console(cloud, "/execution/" + urllib.parse.quote(arn, "")))
    expect(page.locator("#execution-status")).to_have_text("FAILED")
    expect(node(page, "States.DetectLabels")).to_have_class("node type-Task visited failed")
    expect(page.locator("rect.failed")).to_have_count(1)
    expect(page.locator("#path")).to_contain_text("Rekognition.AccessDeniedException")
    expect(page.locator("#path")).to_contain_text("denied")


def test_retries_are_shown_on_the_node(cloud: LocalCloud, page: Page) -> None:
    retry_machine = machine(cloud).rsplit(":", 1)[0] + ":" + RETRY_MACHINE
    arn = run(cloud, "Throttled", retry_machine)
    page.goto(console(cloud, "/execution/" + urllib.parse.quote(arn, "")))
    expect(page.locator("#execution-status")).to_have_text("SUCCEEDED")
    box = page.locator('g.node-box[data-for="States.Detect"]')
    expect(box.locator("text.retries")).to_have_text(f"{TIMES}2")
    expect(page.locator("#path > li").first).to_contain_text(f"retried {TIMES}2")


def test_the_history_is_paged(cloud: LocalCloud, page: Page) -> None:
    arn = run(cloud, "CatFound")
    count = api(cloud, "execution", arn=arn)["eventCount"]
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(console(cloud, "/execution/" + urllib.parse.quote(arn, ""), query="?pageSize=3"))
    rows = page.locator("table.history tbody tr")
    expect(rows).to_have_count(3)
    more = page.locator("#history-more")
    for shown in range(6, count + 3, 3):
        more.click()
        expect(rows).to_have_count(min(shown, count))
    expect(more).to_be_hidden()
    assert any("pageToken=" in url for url in requests)
    assert all("pageSize=3" in url for url in requests if "/api/execution?" in url)


def test_an_unknown_arn_shows_the_api_s_message(cloud: LocalCloud, page: Page) -> None:
    unknown = machine(cloud).replace(":stateMachine:", ":execution:") + ":no such execution"
    page.goto(console(cloud, "/execution/" + urllib.parse.quote(unknown, "")))
    expect(page.locator(".error")).to_contain_text("Not found")
    expect(page.locator(".error")).to_contain_text(unknown)

    gone = machine(cloud) + "Gone"
    page.goto(console(cloud, "/machine/" + urllib.parse.quote(gone, "")))
    expect(page.locator(".error")).to_contain_text(gone)


def test_a_new_execution_shows_up_without_a_reload(cloud: LocalCloud, page: Page) -> None:
    page.goto(console(cloud, "/machine/" + urllib.parse.quote(machine(cloud), "")))
    expect(page.locator("table.executions")).to_be_visible()
    expect(page.locator("#status-filter")).to_be_visible()
    page.select_option("#status-filter", "FAILED")
    expect(page.locator('table.executions tr[data-status="SUCCEEDED"]')).to_have_count(0)
    loads: list[str] = []
    page.on("load", lambda _: loads.append("load"))

    arn = run(cloud, "Denied")
    row = page.locator(f'table.executions tr[data-arn="{arn}"]')
    expect(row).to_be_visible(timeout=10_000)
    expect(row.locator(".subject")).to_have_text(KEY)
    expect(row).to_contain_text("FAILED")
    assert not loads  # polled, not reloaded
