"""Templates are read as SAM reads them (stack/template.py ``parse_yaml``: SAM's constructor
of short intrinsic tags, with libyaml's parser where PyYAML has it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from samtranslator.yaml_helper import yaml_parse

from localcloud.stack.template import parse_yaml

pytestmark = pytest.mark.unit

PATTERN = Path(__file__).parent / "published" / "s3-eventbridge-sfn" / "template.yaml"
SHORT_TAGS = """\
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: !Sub "${AWS::StackName}-q"
      Tags:
        - {Key: a, Value: !GetAtt Other.Arn}
        - {Key: b, Value: !Join [",", [!Ref X, !Select [0, !GetAZs ""]]]}
        - {Key: c, Value: !If [Cond, !ImportValue Y, !Ref "AWS::NoValue"]}
      Other: !GetAtt [Other, Arn]
Conditions:
  Cond: !Equals [!Ref Env, prod]
"""


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(SHORT_TAGS, id="short-tags"),
        pytest.param(PATTERN.read_text(), id="published-pattern"),
    ],
)
def test_a_template_parses_as_sam_parses_it(text: str) -> None:
    assert parse_yaml(text) == yaml_parse(text)
