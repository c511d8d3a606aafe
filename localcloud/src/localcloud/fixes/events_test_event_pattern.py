"""Fix: EventBridge TestEventPattern answers, with AWS's checks.

moto's handler returns nothing (``EventsBackend.test_event_pattern`` raises
NotImplementedError). It is answered with moto's own rule matcher (``EventPattern``: prefix,
suffix, anything-but, exists, numeric, equals-ignore-case, wildcard, cidr, $or), the one the
local rules route with, so TestEventPattern and delivery agree; after the checks AWS
documents: the pattern must be valid, and the event must be a JSON object with id, account,
source, time, region, resources and detail-type (EventBridge API Reference,
TestEventPattern). The redrive tool checks routes with it before it sends anything.
"""

from __future__ import annotations

import json

from moto.events.exceptions import InvalidEventPatternException, ValidationException
from moto.events.models import EventPattern, EventPatternParser
from moto.events.responses import EventsHandler

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES"]

_REQUIRED_EVENT_FIELDS = ("id", "account", "source", "time", "region", "resources", "detail-type")


def _test_event_pattern(self: EventsHandler) -> str:
    raw_pattern = self._get_param("EventPattern")
    raw_event = self._get_param("Event")
    try:
        parsed = json.loads(raw_pattern or "")
    except ValueError:
        raise InvalidEventPatternException(reason="Invalid JSON") from None
    if not isinstance(parsed, dict):
        raise InvalidEventPatternException(reason="Filter is not an object")
    pattern = EventPattern(raw_pattern, EventPatternParser(raw_pattern).parse())
    try:
        event = json.loads(raw_event or "")
    except ValueError:
        raise ValidationException("Parameter Event is not valid.") from None
    if not isinstance(event, dict) or any(f not in event for f in _REQUIRED_EVENT_FIELDS):
        raise ValidationException("Parameter Event is not valid.")
    return json.dumps({"Result": pattern.matches_event(event)})


def _build(rt: Runtime) -> Targets:
    return {(EventsHandler, "test_event_pattern"): _test_event_pattern}


PATCHES = [
    Patch(
        name="events-test-event-pattern",
        kind=Kind.FIX,
        reason="TestEventPattern answers with the rules' own matcher after AWS's validation "
        "(moto raises NotImplementedError).",
        test="tests/e2e/test_localcloud_fidelity_event_patterns.py"
        "::test_test_event_pattern_matches_as_the_rule_does",
        build=_build,
        upstream="no moto issue found (searched 2026-11-23): moto events/models.py "
        "EventsBackend.test_event_pattern",
    )
]
