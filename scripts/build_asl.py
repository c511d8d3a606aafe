"""Generate the workflows' definitions (statemachines/<name>.asl.json) from their sources.

Two workflows: ``pipeline`` (the per-object workflow) and ``large-object``. Each source,
statemachines/<name>.asl.yaml, is read with statemachines/shared.asl.yaml in front of it (the
anchors of the blocks and states both share). The JSON is what template.yaml's DefinitionUri
names, what sam deploy / sam local read, and what the tests load, so it stays committed.
Edit the YAML, then:

    .venv/bin/python scripts/build_asl.py           # write the *.asl.json
    .venv/bin/python scripts/build_asl.py --check   # exit 1 if a JSON is not up to date

Generation: load shared + source as one YAML document (safe loader: anchors, aliases and
``<<`` merge keys), drop the top-level ``x-*`` keys that only hold anchors, write the
workflow's own states in source order and then the common states it merged
(``x-common-states``), each state's fields in the usual ASL order (a merge puts the merged
fields first), and dump JSON with a two-space indent. A state that no path reaches is an
error, as Step Functions makes it one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
STATEMACHINES = ROOT / "statemachines"
SHARED = STATEMACHINES / "shared.asl.yaml"
WORKFLOWS = ("pipeline", "large-object")
SOURCE = STATEMACHINES / "pipeline.asl.yaml"  # the per-object workflow
TARGET = STATEMACHINES / "pipeline.asl.json"


def source_of(name: str) -> Path:
    return STATEMACHINES / f"{name}.asl.yaml"


def target_of(name: str) -> Path:
    return STATEMACHINES / f"{name}.asl.json"


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


def _targets(state: dict[str, Any]) -> list[str]:
    """The states ``state`` can go to, in reading order."""
    found = [choice["Next"] for choice in state.get("Choices", []) if "Next" in choice]
    found += [state[k] for k in ("Default", "Next") if k in state]
    found += [catch["Next"] for catch in state.get("Catch", [])]
    return found


def _check_reachable(states: dict[str, Any], start: str, source: Path) -> None:
    """Raise ValueError on a state no path from StartAt reaches."""
    seen, queue = {start}, [start]
    while queue:
        for target in _targets(states[queue.pop()]):
            if target not in seen:
                seen.add(target)
                queue.append(target)
    unreachable = sorted(set(states) - seen)
    if unreachable:
        raise ValueError(f"{source}: no path reaches {', '.join(unreachable)}")


def definition(source: Path = SOURCE, shared: Path | None = SHARED) -> dict[str, Any]:
    """The state machine definition the YAML source (with the shared blocks) describes."""
    text = source.read_text(encoding="utf-8")
    if shared is not None:
        text = shared.read_text(encoding="utf-8") + "\n" + text
    loaded = yaml.safe_load(text)
    if not isinstance(loaded, dict) or not isinstance(loaded.get("States"), dict):
        raise ValueError(f"{source}: expected a mapping with States")
    asl = {k: v for k, v in loaded.items() if not str(k).startswith("x-")}
    states = asl["States"]
    _check_reachable(states, asl["StartAt"], source)
    # The workflow's own states as its source writes them, then the common states it merged.
    common = loaded.get("x-common-states") or {}
    order = [name for name in states if name not in common] + [n for n in common if n in states]
    asl["States"] = {name: _ordered(states[name]) for name in order}
    return asl


def render(source: Path = SOURCE, shared: Path | None = SHARED) -> str:
    """The JSON text of the source's definition, as it is committed."""
    return json.dumps(definition(source, shared), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="verify the JSON is up to date; write nothing"
    )
    args = parser.parse_args(argv)
    stale = 0
    for name in WORKFLOWS:
        source, target = source_of(name), target_of(name)
        text = render(source, SHARED)
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        rel_source, rel_target = source.relative_to(ROOT), target.relative_to(ROOT)
        if args.check:
            if current != text:
                print(
                    f"{rel_target} is not what {rel_source} generates: "
                    "run .venv/bin/python scripts/build_asl.py",
                    file=sys.stderr,
                )
                stale += 1
            else:
                print(f"{rel_target} is up to date")
        elif current == text:
            print(f"{rel_target} unchanged")
        else:
            target.write_text(text, encoding="utf-8")
            print(f"wrote {rel_target} from {rel_source}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
