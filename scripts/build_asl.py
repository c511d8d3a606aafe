"""Generate statemachines/pipeline.asl.json from its source, statemachines/pipeline.asl.yaml.

The YAML is the readable source (anchors for the blocks many states share); the JSON is what
template.yaml's DefinitionUri names, what sam deploy / sam local read, and what the tests load,
so it stays committed. Edit the YAML, then:

    .venv/bin/python scripts/build_asl.py           # write pipeline.asl.json
    .venv/bin/python scripts/build_asl.py --check   # exit 1 if the JSON is not up to date

Generation: load the YAML (safe loader: anchors, aliases and ``<<`` merge keys), drop the
top-level ``x-*`` keys that only hold anchors, write each state's fields in the usual ASL
order (a merge puts the merged fields first), and dump JSON with a two-space indent.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "statemachines" / "pipeline.asl.yaml"
TARGET = ROOT / "statemachines" / "pipeline.asl.json"

# The order fields are written in, per state; fields not listed follow in source order.
STATE_FIELD_ORDER = (
    "Type",
    "Comment",
    "QueryLanguage",
    "InputPath",
    "Choices",
    "Default",
    "Resource",
    "Parameters",
    "Arguments",
    "TimeoutSeconds",
    "TimeoutSecondsPath",
    "HeartbeatSeconds",
    "HeartbeatSecondsPath",
    "Seconds",
    "SecondsPath",
    "Timestamp",
    "TimestampPath",
    "ItemsPath",
    "ItemSelector",
    "ItemProcessor",
    "MaxConcurrency",
    "Branches",
    "Result",
    "ResultSelector",
    "ResultPath",
    "OutputPath",
    "Output",
    "Assign",
    "Retry",
    "Catch",
    "Error",
    "ErrorPath",
    "Cause",
    "CausePath",
    "Next",
    "End",
)


def _ordered(state: dict[str, Any]) -> dict[str, Any]:
    rank = {name: i for i, name in enumerate(STATE_FIELD_ORDER)}
    return dict(sorted(state.items(), key=lambda kv: rank.get(kv[0], len(rank))))


def definition(source: Path = SOURCE) -> dict[str, Any]:
    """The state machine definition the YAML source describes."""
    loaded = yaml.safe_load(source.read_text(encoding="utf-8"))
    if not isinstance(loaded, dict) or not isinstance(loaded.get("States"), dict):
        raise ValueError(f"{source}: expected a mapping with States")
    asl = {k: v for k, v in loaded.items() if not str(k).startswith("x-")}
    asl["States"] = {name: _ordered(state) for name, state in asl["States"].items()}
    return asl


def render(source: Path = SOURCE) -> str:
    """The JSON text of pipeline.asl.json, as it is committed."""
    return json.dumps(definition(source), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="verify the JSON is up to date; write nothing"
    )
    args = parser.parse_args(argv)
    text = render(SOURCE)
    current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
    rel_source, rel_target = SOURCE.relative_to(ROOT), TARGET.relative_to(ROOT)
    if args.check:
        if current != text:
            print(
                f"{rel_target} is not what {rel_source} generates: "
                "run .venv/bin/python scripts/build_asl.py",
                file=sys.stderr,
            )
            return 1
        print(f"{rel_target} is up to date")
        return 0
    if current == text:
        print(f"{rel_target} unchanged")
    else:
        TARGET.write_text(text, encoding="utf-8")
        print(f"wrote {rel_target} from {rel_source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
