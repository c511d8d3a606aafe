"""Template preparation: load, localize (no sam build/package needed), SAM transform offline."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3

from localcloud import code
from localcloud.stack.base import StackDeployError


def load_template(path: Path) -> dict[str, Any]:
    """A SAM/CloudFormation YAML or JSON template, short tags (!Ref, !Sub ...) expanded. A
    top-level section with nothing under it (``Parameters:`` followed only by comments) is read
    as absent, as CloudFormation deploys such a template."""
    template = copy.deepcopy(parse_yaml(Path(path).read_text()))
    return {key: value for key, value in template.items() if value is not None}


@functools.lru_cache(maxsize=8)
def parse_yaml(text: str) -> dict[str, Any]:
    """The parsed template of ``text`` (cached: read it, never change it): what SAM's
    ``yaml_parse`` makes of it (its constructor of short intrinsic tags on a safe loader), with
    libyaml's parser where PyYAML has it (~10x faster than the pure-Python one SAM uses)."""
    import yaml  # type: ignore[import-untyped]
    from samtranslator.yaml_helper import intrinsics_multi_constructor

    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        pass

    Loader.add_multi_constructor("!", intrinsics_multi_constructor)
    parsed: dict[str, Any] = yaml.load(text, Loader=Loader)  # noqa: S506 - a safe loader
    return parsed


def _is_local(uri: Any) -> bool:
    return isinstance(uri, str) and not uri.startswith("s3://")


def localize(
    template: dict[str, Any], base_dir: Path, upload: Callable[[Path], dict[str, str]]
) -> dict[str, Any]:
    """A copy of ``template`` with local artifact paths replaced, as ``sam package`` would
    (a local CodeUri is unpacked once here: an unsafe archive is a deploy error).

    ``upload(path)`` returns ``{"Bucket": ..., "Key": ...}`` for a local CodeUri/ContentUri.
    """
    out = copy.deepcopy(template)
    resources = out.get("Resources") or {}
    global_fn = (out.get("Globals") or {}).get("Function") or {}

    def local_path(uri: str, where: str) -> Path:
        path = (base_dir / uri).resolve()
        if not path.exists():
            raise StackDeployError(f"{where}: {uri!r} does not exist (relative to {base_dir})")
        return path

    def function_code(uri: str, where: str) -> dict[str, str]:
        path = local_path(uri, where)
        try:
            code.code_dir(path)
        except ValueError as exc:  # an unsafe archive
            raise StackDeployError(str(exc)) from exc
        return upload(path)

    if _is_local(global_fn.get("CodeUri")):
        global_fn["CodeUri"] = function_code(global_fn["CodeUri"], "Globals.Function.CodeUri")
    for logical_id, resource in resources.items():
        rtype, props = resource.get("Type"), resource.get("Properties") or {}
        if rtype == "AWS::Serverless::Function" and _is_local(props.get("CodeUri")):
            props["CodeUri"] = function_code(props["CodeUri"], f"{logical_id}.CodeUri")
        elif rtype == "AWS::Serverless::LayerVersion" and _is_local(props.get("ContentUri")):
            props["ContentUri"] = upload(
                local_path(props["ContentUri"], f"{logical_id}.ContentUri")
            )
        elif rtype == "AWS::Serverless::StateMachine" and "DefinitionUri" in props:
            uri = props.pop("DefinitionUri")
            if not _is_local(uri):
                raise StackDeployError(
                    f"{logical_id}.DefinitionUri {uri!r}: only local definition files are "
                    "supported locally (moto does not read DefinitionS3Location)"
                )
            # a .json or .yaml file, as SAM reads it
            props["Definition"] = parse_yaml(
                local_path(uri, f"{logical_id}.DefinitionUri").read_text()
            )
        resource["Properties"] = props
    return out


def override_environment(template: dict[str, Any], overrides: dict[str, Any]) -> None:
    """``sam local invoke --env-vars``: in place, the values of the environment variables each
    function of the transformed ``template`` declares, from ``overrides[<logical id or
    FunctionName>]``, else ``overrides["Parameters"]``; a variable the template does not
    declare is not added, as SAM does."""
    common = overrides.get("Parameters") or {}
    for logical_id, resource in (template.get("Resources") or {}).items():
        props = resource.get("Properties") or {}
        variables = (props.get("Environment") or {}).get("Variables")
        if resource.get("Type") != "AWS::Lambda::Function" or not isinstance(variables, dict):
            continue
        name = props.get("FunctionName")
        own = overrides.get(logical_id) or (overrides.get(name) if isinstance(name, str) else None)
        values = {**common, **(own or {})}
        for key in variables.keys() & values.keys():
            value = values[key]
            variables[key] = json.dumps(value) if isinstance(value, bool) else str(value)


def sam_transform(
    template: dict[str, Any], parameters: dict[str, str] | None = None, *, region: str
) -> dict[str, Any]:
    """``AWS::Serverless-2016-10-31`` applied offline (the steps of samtranslator's transform)."""
    key = json.dumps([template, parameters or {}, region], sort_keys=True, default=str)
    return copy.deepcopy(_transform(key))


@functools.lru_cache(maxsize=8)
def _transform(key: str) -> dict[str, Any]:  # per (template, parameters, region): deep copies
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator
    from samtranslator.utils.py27hash_fix import (
        to_py27_compatible_template,
        undo_mark_unicode_str_in_template,
    )

    template, values, region = json.loads(key)  # fresh objects: the translator changes them
    if "Transform" not in template:
        return template
    to_py27_compatible_template(template, values)
    # An explicit session: the translator needs a region and must not depend on the caller's env.
    translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name=region))
    transformed = translator.translate(  # no IAM call: samtranslator's bundled managed-policy map
        template, parameter_values=values, get_managed_policy_map=dict
    )
    result: dict[str, Any] = undo_mark_unicode_str_in_template(transformed)
    return result
