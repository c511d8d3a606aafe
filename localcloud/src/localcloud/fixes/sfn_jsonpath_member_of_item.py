"""Fix: a JSONPath naming one member of one array item (``$.Labels[0].Name``) is that value.

Step Functions evaluates a path without a query (no wildcard, slice, filter, union or deep
scan) to the one value it names; only a query yields a list. moto's ``extract_json``
(asl/utils/json_path.py) returns a list whenever the match's parent was reached through an
index, a workaround for filter queries (getmoto/moto#7825) that also wraps the definite
``$.Labels[0].Name`` in a list. So the published s3-eventbridge-sfn pattern's Choice
(``$.Labels[0].Name`` StringEquals "Cat") never matched, and Parameters / ResultSelector /
intrinsic arguments got ``["Cat"]`` where AWS gives ``"Cat"``.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from moto.stepfunctions.parser.asl.utils import json_path

from localcloud.patching import Kind, Patch, Targets
from localcloud.runtime import Runtime

__all__ = ["PATCHES", "extract_json"]

_EXTRACT_JSON = json_path.extract_json
# wildcard, slice, filter, union, deep scan: a query, whose result is a list (moto decides)
_QUERY = re.compile(r"\*|\.\.|\[\s*\?|\[[^\]]*[:,][^\]]*\]")
_OPERATORS = ("boolean_equals", "numeric", "string_operators", "timestamp_operators")
# the modules (under moto.stepfunctions.parser.asl) that bound moto's extract_json by name
_IMPORTERS = (
    "component.common.string.string_expression",
    "component.intrinsic.argument.argument",
    *(f"component.state.choice.comparison.operator.implementations.{m}" for m in _OPERATORS),
    "eval.states",
)


def extract_json(path: str, data: Any) -> Any:
    if _QUERY.search(path):
        return _EXTRACT_JSON(path, data)
    matches = json_path.parse(path).find(data)
    if not matches:
        raise json_path.NoSuchJsonPathError(json_path=path, data=data)
    return matches[0].value


def _build(rt: Runtime) -> Targets:
    targets: Targets = {(json_path, "extract_json"): extract_json}
    for name in _IMPORTERS:
        module = importlib.import_module(f"moto.stepfunctions.parser.asl.{name}")
        targets[(module, "extract_json")] = extract_json
    return targets


PATCHES = [
    Patch(
        name="sfn-jsonpath-member-of-item",
        kind=Kind.FIX,
        reason="A definite JSONPath through an array item ($.a[0].b) is one value, as in Step "
        "Functions (moto returns a one-element list when the parent was an index).",
        test="localcloud/tests/test_mock_config.py::test_a_test_case_runs_its_mocked_response",
        build=_build,
        upstream="related to getmoto/moto#7825 (its fix wraps every member of an indexed item); "
        "the regression is not reported yet",
    )
]
