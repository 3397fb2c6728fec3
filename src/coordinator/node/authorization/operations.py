"""Authorized-operation bitfields (KIP-430): as a Kafka broker without an authorizer gives them,
and, when the node has one, computed from it (the `after` steps of the rules that answer them).

DescribeGroups (v3+), Metadata (v8+) and DescribeCluster answer `include_*_authorized_operations`
with a 32-bit field, bit n set for ACL operation code n. Kafka computes it from its authorizer;
with none configured every operation its ACLs support for the resource type is allowed
(`AuthHelper.authorizedOperations`, `AclEntry.supportedOperations`); so does this node when it
has none. INT32_MIN means "not requested" (or not given, as for a group described with an error).
"""

from __future__ import annotations

from typing import Any

from coordinator.node.access_control import AccessControl
from coordinator.node.authorization.guard import After
from coordinator.node.contract import RequestContext
from coordinator.wire.security.acls import CLUSTER_NAME, Operation, ResourceType

NOT_REQUESTED = -(2**31)

# Kafka's AclOperation codes.
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12


def bitfield(*operations: int) -> int:
    return sum(1 << op for op in set(operations))


GROUP_OPERATIONS = bitfield(READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS)
TOPIC_OPERATIONS = bitfield(
    READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS
)
CLUSTER_OPERATIONS = bitfield(
    CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE
)


def if_requested(requested: object, operations: int) -> int:
    return operations if requested else NOT_REQUESTED


# -- the fields, computed from the authorizer when the node has one ---------------------------
def authorized(
    access: AccessControl, ctx: RequestContext, kind: ResourceType, name: str, supported: int
) -> int:
    """The KIP-430 bitfield: the supported operations the client may do on the resource."""
    allowed = 0
    for operation in Operation:
        if supported & (1 << operation) and access.allowed(ctx, operation, kind, name):
            allowed |= 1 << operation
    return allowed


def with_operations(field: str, kind: ResourceType, supported: int, key: str) -> After:
    """Compute `field` of each entry of the answer's list (when it was asked for)."""
    entries_field = "topics" if kind is ResourceType.TOPIC else "groups"

    def after(
        request: Any,
        version: int,
        ctx: RequestContext,
        access: AccessControl,
        answer: dict[str, Any],
    ) -> dict[str, Any]:
        entries = []
        for entry in answer.get(entries_field, []):
            asked = entry.get(field, NOT_REQUESTED) != NOT_REQUESTED
            if asked and entry.get(key) is not None:
                entry = {**entry, field: authorized(access, ctx, kind, entry[key], supported)}
            entries.append(entry)
        return {**answer, entries_field: entries}

    return after


def cluster_operations(
    request: Any, version: int, ctx: RequestContext, access: AccessControl, answer: dict[str, Any]
) -> dict[str, Any]:
    field = "cluster_authorized_operations"
    if answer.get(field, NOT_REQUESTED) == NOT_REQUESTED:
        return answer
    ops = authorized(access, ctx, ResourceType.CLUSTER, CLUSTER_NAME, CLUSTER_OPERATIONS)
    return {**answer, field: ops}


def then(*afters: After) -> After:
    """The `after` steps in turn."""

    def after(
        request: Any,
        version: int,
        ctx: RequestContext,
        access: AccessControl,
        answer: dict[str, Any],
    ) -> dict[str, Any]:
        for step in afters:
            answer = step(request, version, ctx, access, answer)
        return answer

    return after


GROUP_AUTHORIZED_OPERATIONS = with_operations(
    "authorized_operations", ResourceType.GROUP, GROUP_OPERATIONS, "group_id"
)
