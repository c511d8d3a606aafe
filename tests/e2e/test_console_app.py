"""The console with this application's pages (ingest_tools.local_pipeline.console_extensions):
the app's local cloud served over HTTP, a good file, a file with bad values and an
undeliverable one uploaded as `ingestctl local demo` does, then in Chromium: the good file's
execution with its path highlighted, the bad file's object page with its quarantine reason,
and the rule's dead-letter queue with the THROTTLING dead letter and its `ingestctl redrive`
command. Skipped, with the reason, without Playwright or Chromium
(localcloud.console.testing).
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from ingest_tools.local_pipeline import ROOT, Pipeline
from localcloud.console import testing

if (_REASON := testing.skip_reason()) is not None:  # pragma: no cover - the environment's
    pytest.skip(_REASON, allow_module_level=True)

from playwright.sync_api import Page, expect, sync_playwright

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

FILES = ROOT / "events" / "files"
GOOD = "incoming/orders/console good.csv"
BAD = "incoming/orders/été+100%/bad values.csv"  # a space, "+", "%" and non-ASCII
UNDELIVERED = "incoming/orders/undelivered.csv"


@pytest.fixture
def page() -> Iterator[Page]:
    with sync_playwright() as playwright:
        browser = testing.launch(playwright)
        context = browser.new_context()
        context.set_default_timeout(testing.TIMEOUT_MS)
        opened = context.new_page()
        errors: list[str] = []
        opened.on("pageerror", lambda error: errors.append(str(error)))
        yield opened
        context.close()
        browser.close()
    assert not errors, f"script errors on the page: {errors}"


def console(p: Pipeline, fragment: str) -> str:
    return f"{p.cloud.describe()['endpoint']}/_localcloud/console/#{fragment}"


def quoted(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def test_the_app_s_console_shows_paths_quarantines_and_dead_letters(
    p: Pipeline, page: Page
) -> None:
    p.cloud.serve(port=0)
    good = (FILES / "orders-good.csv").read_bytes()
    _, good_run = p.ingest(GOOD, good)
    _, bad_run = p.ingest(BAD, (FILES / "orders-bad-values.csv").read_bytes())
    assert (good_run.status, bad_run.status) == ("SUCCEEDED", "FAILED")
    p.cloud.faults.fail_delivery("THROTTLING", times=1000, rule="ObjectCreated")
    p.delivery(UNDELIVERED, p.put(UNDELIVERED, good))
    p.cloud.faults.clear()

    # the good file's execution: its path highlighted
    page.goto(console(p, "/execution/" + quoted(good_run.arn)))
    expect(page.locator("#execution-status")).to_have_text("SUCCEEDED")
    for state in ("ClaimObject", "ProcessObject", "RecordSuccess"):
        expect(page.locator(f'rect.visited[data-node-id="States.{state}"]')).to_have_count(1)
    expect(page.locator("rect.failed")).to_have_count(0)
    expect(page.locator("#menu a")).to_have_text(["State machines", "Queues", "Objects"])

    # the objects page: search, then the bad file's page with its quarantine reason
    page.goto(console(p, "/objects?q=" + quoted("été+100%")))
    link = page.locator(f'#objects tr[data-key="{BAD}"] a')
    expect(link).to_have_text(BAD)
    expect(page.locator("#objects tbody tr")).to_have_count(1)
    link.click()
    expect(page).to_have_url(console(p, "/object/" + quoted(BAD)))
    expect(page.locator("#title")).to_have_text(BAD)
    expect(page.locator('dd[data-field="quarantineReason"]')).to_contain_text(
        "not a decimal number"
    )
    expect(page.locator("table.records tbody tr")).to_have_count(1)
    expect(page.locator('table.records td[data-field="status"]')).to_have_text("FAILED")
    execution = page.locator("#object-links a")
    expect(execution).to_have_count(1)
    execution.click()
    expect(page.locator("#execution-status")).to_have_text("FAILED")

    # the rule's dead-letter queue: the THROTTLING dead letter and the app's redrive command
    dlq_url = p.stack.outputs["EventDeliveryDLQUrl"]
    page.goto(console(p, "/queues"))
    expect(page.locator(f'tr[data-url="{dlq_url}"]')).to_contain_text("DLQ of rule")
    page.goto(console(p, "/queue/" + quoted(dlq_url)))
    message = page.locator("table.messages tbody tr[data-message-id]")
    expect(message).to_have_count(1)
    expect(message.locator('dd[data-attribute="ERROR_CODE"]')).to_have_text("THROTTLING")
    expect(message.locator("td.body")).to_contain_text(UNDELIVERED)
    redrive = message.locator("code.redrive")
    expect(redrive).to_contain_text("ingestctl redrive ")
    expect(redrive).to_contain_text("--endpoint-url " + str(p.cloud.describe()["endpoint"]))
    # peeked, not received: the queue still holds it, never received
    attributes: Any = p.sqs.get_queue_attributes(
        QueueUrl=dlq_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "1"
    expect(message).to_contain_text("received \N{MULTIPLICATION SIGN}0")


def test_the_graphs_of_both_workflows_show_every_state_and_transition(
    p: Pipeline, page: Page
) -> None:
    """The pipeline's and the large-object workflow's graphs, as the page draws them: a node
    for every state of the deployed definitions (nested ones included) and an edge for every
    Next, Choice, Default and Catch (each definition walked here, independently)."""
    p.cloud.serve(port=0)
    for output in ("PipelineStateMachineArn", "LargeObjectStateMachineArn"):
        arn = p.stack.outputs[output]
        definition = json.loads(p.sfn.describe_state_machine(stateMachineArn=arn)["definition"])
        states, edges = walk(definition["States"], "States.", "")
        page.goto(console(p, "/machine/" + quoted(arn)))
        expect(page.locator("rect[data-node-id]").first).to_be_visible()
        drawn = set(
            page.locator("rect[data-node-id]").evaluate_all(
                "nodes => nodes.map(n => n.dataset.nodeId)"
            )
        )
        assert states <= drawn, states - drawn
        lines = page.locator("path[data-source]").evaluate_all(
            "paths => paths.map(p => p.dataset.source + ' -> ' + p.dataset.target)"
        )
        assert edges <= set(lines), edges - set(lines)


def walk(states: dict[str, Any], prefix: str, group: str) -> tuple[set[str], set[str]]:
    """Node ids and ``source -> target`` edges of a States object (the console's ids:
    ``States.<Name>`` at the top, ``<parent id>/Branch<i>/<Name>`` and
    ``<parent id>/ItemProcessor/<Name>`` nested)."""

    def node(name: str) -> str:
        return f"{prefix}{name}" if not group else f"{group}/{name}"

    nodes: set[str] = set()
    edges: set[str] = set()
    for name, state in states.items():
        nodes.add(node(name))
        targets = [state.get("Next"), state.get("Default")]
        targets += [c.get("Next") for c in state.get("Choices", [])]
        targets += [c.get("Next") for c in state.get("Catch", [])]
        edges |= {f"{node(name)} -> {node(t)}" for t in targets if t}
        processor = state.get("ItemProcessor") or state.get("Iterator")
        if processor:
            inner = walk(processor["States"], prefix, f"{node(name)}/ItemProcessor")
            nodes, edges = nodes | inner[0], edges | inner[1]
        for index, branch in enumerate(state.get("Branches", [])):
            inner = walk(branch["States"], prefix, f"{node(name)}/Branch{index}")
            nodes, edges = nodes | inner[0], edges | inner[1]
    return nodes, edges
