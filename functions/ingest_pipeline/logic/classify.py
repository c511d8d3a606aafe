"""Classification of errors the pipeline's own code did not raise.

Our handlers raise typed errors (``ingest_pipeline.errors``) and the state machine routes
those by name. Everything else (Lambda service errors, AWS SDK integration errors,
``States.*`` errors, a crashed runtime) reaches the ``ClassifyError`` state, which applies
the first matching rule of ``RULES``. Patterns are shell-style (``fnmatch``), matched
against the Step Functions ``Error`` name, case-sensitively.

Default: an error no rule knows is CONFIGURATION. It is escalated to operations and not
retried automatically (an unknown error retried forever hides a bug), and the data is not
blamed for it (nothing is quarantined).
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from msgspec import Struct

from ingest_pipeline.errors import ErrorClass, class_of_error_name


class Rule(Struct, frozen=True):
    pattern: str
    error_class: ErrorClass
    reason: str


RULES: tuple[Rule, ...] = (
    # Timeouts and capacity: the same input may well succeed later.
    Rule("States.Timeout", ErrorClass.TRANSIENT, "the task timed out"),
    Rule("States.HeartbeatTimeout", ErrorClass.TRANSIENT, "the task stopped heartbeating"),
    Rule("Sandbox.Timedout", ErrorClass.TRANSIENT, "the function timed out"),
    Rule("Lambda.TooManyRequestsException", ErrorClass.TRANSIENT, "Lambda throttled"),
    Rule("Lambda.ServiceException", ErrorClass.TRANSIENT, "Lambda service error"),
    Rule("Lambda.AWSLambdaException", ErrorClass.TRANSIENT, "Lambda service error"),
    Rule("Lambda.SdkClientException", ErrorClass.TRANSIENT, "Lambda client error"),
    Rule("Lambda.EC2ThrottledException", ErrorClass.TRANSIENT, "Lambda ENI throttled"),
    Rule("*ThrottlingException", ErrorClass.TRANSIENT, "throttled"),
    Rule("*Throttled*", ErrorClass.TRANSIENT, "throttled"),
    Rule("*ProvisionedThroughputExceededException", ErrorClass.TRANSIENT, "throttled"),
    Rule("*RequestLimitExceeded", ErrorClass.TRANSIENT, "throttled"),
    Rule("*SlowDown", ErrorClass.TRANSIENT, "S3 asked to slow down"),
    Rule("*InternalServerError", ErrorClass.TRANSIENT, "service error"),
    Rule("*InternalError", ErrorClass.TRANSIENT, "service error"),
    Rule("*ServiceUnavailable*", ErrorClass.TRANSIENT, "service unavailable"),
    # The deployment is wrong: permissions, missing resources, broken code or wiring.
    Rule(
        "States.Permissions", ErrorClass.CONFIGURATION, "the state machine role lacks a permission"
    ),
    Rule("*AccessDenied*", ErrorClass.CONFIGURATION, "access denied"),
    Rule("*NotAuthorized*", ErrorClass.CONFIGURATION, "not authorized"),
    Rule("*ResourceNotFoundException", ErrorClass.CONFIGURATION, "a resource does not exist"),
    Rule("*NoSuchBucket", ErrorClass.CONFIGURATION, "the bucket does not exist"),
    Rule("*KMS*", ErrorClass.CONFIGURATION, "the KMS key refused the operation"),
    Rule("Runtime.*", ErrorClass.CONFIGURATION, "the function's runtime failed (code, memory)"),
    Rule("Lambda.*", ErrorClass.CONFIGURATION, "Lambda rejected the invocation"),
    Rule("States.DataLimitExceeded", ErrorClass.CONFIGURATION, "a state exceeded 256 KB"),
    Rule("States.Runtime", ErrorClass.CONFIGURATION, "the workflow definition failed"),
    Rule("States.IntrinsicFailure", ErrorClass.CONFIGURATION, "the workflow definition failed"),
    Rule(
        "States.ResultPathMatchFailure", ErrorClass.CONFIGURATION, "the workflow definition failed"
    ),
    Rule("States.ParameterPathFailure", ErrorClass.CONFIGURATION, "the workflow definition failed"),
    Rule("*ValidationException", ErrorClass.CONFIGURATION, "a request was invalid"),
    # The large-file path's Distributed Map (ProcessChunks).
    Rule(
        "States.ExceedToleratedFailureThreshold",
        ErrorClass.CONFIGURATION,
        "a chunk failed with an error outside the taxonomy (the Map Run lists its execution)",
    ),
    Rule(
        "States.ItemReaderFailed",
        ErrorClass.CONFIGURATION,
        "the Map could not read its chunk plan under work/ (permissions, lifecycle)",
    ),
    Rule(
        "States.ResultWriterFailed",
        ErrorClass.CONFIGURATION,
        "the Map could not write its results under work/map-results/ (permissions)",
    ),
    # A version that vanished before it was read is not worth retrying.
    Rule("*NoSuchKey", ErrorClass.PERMANENT, "the object no longer exists"),
    Rule("*NoSuchVersion", ErrorClass.PERMANENT, "the object version no longer exists"),
)

DEFAULT_CLASS = ErrorClass.CONFIGURATION
DEFAULT_REASON = "unknown error: escalated to operations (default rule)"


class Classification(Struct, frozen=True):
    error_class: ErrorClass
    reason: str
    rule: str  # the matching pattern, "taxonomy" for our own errors, or "default"


def classify(error_name: str) -> Classification:
    """Classify a Step Functions error name (``Error`` of a caught error)."""
    own = class_of_error_name(error_name)
    if own is not None:
        return Classification(own, "raised by the pipeline's own code", "taxonomy")
    for rule in RULES:
        if fnmatchcase(error_name, rule.pattern):
            return Classification(rule.error_class, rule.reason, rule.pattern)
    return Classification(DEFAULT_CLASS, DEFAULT_REASON, "default")
