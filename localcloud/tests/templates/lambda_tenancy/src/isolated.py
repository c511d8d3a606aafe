"""A tenant-isolated handler whose module-level state shows which environment ran it."""

import uuid

ENVIRONMENT = str(uuid.uuid4())  # the init phase of this environment
SEEN: list[str] = []  # every tenant id this environment has served


def handler(event, context):
    SEEN.append(context.tenant_id)
    return {"tenant": context.tenant_id, "environment": ENVIRONMENT, "seen": list(SEEN)}


def shared(event, context):
    """The same code, in a function without tenant isolation: no tenant id."""
    SEEN.append(context.tenant_id)
    return {"tenant": context.tenant_id, "environment": ENVIRONMENT, "seen": list(SEEN)}
