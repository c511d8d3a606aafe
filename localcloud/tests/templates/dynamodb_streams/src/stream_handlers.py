"""Handlers of the DynamoDB Streams test template (localcloud/tests/test_dynamodb_streams.py)."""


def record(event, context):
    return None


def fail_on_poison(event, context):
    for rec in event["Records"]:
        if "poison" in rec["dynamodb"].get("NewImage", {}):
            raise ValueError(f"cannot process {rec['dynamodb']['Keys']['pk']['S']}")


def report_failures(event, context):
    failures = [
        {"itemIdentifier": rec["dynamodb"]["SequenceNumber"]}
        for rec in event["Records"]
        if rec["dynamodb"]["Keys"]["pk"]["S"].startswith("fail")
    ]
    return {"batchItemFailures": failures}
