"""Two stacks of one process with the same inline code: the second imports it again, cold,
with its own environment (a module-level read of a variable does not keep the first stack's)."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest

from localcloud.cloud import LocalCloud

pytestmark = [pytest.mark.e2e]

TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Parameters:
  Colour: {Type: String}
Resources:
  Reader:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: python3.13
      Handler: index.handler
      Environment: {Variables: {COLOUR: !Ref Colour}}
      InlineCode: |
        import os
        COLOUR = os.environ["COLOUR"]  # read once, at import (a cold start)
        def handler(event, context):
            return COLOUR
"""


def test_the_next_stack_imports_the_same_inline_code_again(tmp_path: Path) -> None:
    (tmp_path / "template.yaml").write_text(TEMPLATE)
    for colour in ("red", "blue"):
        with LocalCloud(tmp_path / "template.yaml", parameters={"Colour": colour}) as cloud:
            reply = boto3.client("lambda").invoke(FunctionName=cloud.functions["Reader"])
            assert json.loads(reply["Payload"].read()) == colour
