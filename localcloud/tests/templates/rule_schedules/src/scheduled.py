def record(event, context):
    """The event the function was invoked with, as its result."""
    return event
