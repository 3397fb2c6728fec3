"""What the ACL APIs (CreateAcls, DescribeAcls, DeleteAcls) share: reading a filter off the
wire, and the answer when the node has no authorizer or the client may not read or change the
ACLs."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.access_control import AccessControl
from coordinator.node.contract import RequestContext
from coordinator.wire.security.acls import (
    Acl,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

NO_AUTHORIZER = "No Authorizer is configured on the broker"


def disabled(ctx: RequestContext) -> tuple[ErrorCode, str] | None:
    """SECURITY_DISABLED when the node has no authorizer, as Kafka answers the ACL APIs then (not
    an authorization check: with an authorizer, the module's `AUTHORIZATION` asks it first)."""
    if ctx.broker.access is None:
        return ErrorCode.security_disabled, NO_AUTHORIZER
    return None


def cluster_denied(operation: Operation) -> tuple[ErrorCode, str]:
    """The answer when the client may not read (DESCRIBE) or change (ALTER) the ACLs."""
    return ErrorCode.cluster_authorization_failed, f"{operation.name} on the cluster is denied"


def access_of(ctx: RequestContext) -> AccessControl:
    access = ctx.broker.access
    assert access is not None  # `disabled` said so
    return access


def read_filter(wire: Any) -> AclFilter:
    """A DescribeAcls/DeleteAcls filter; `ValueError` for codes Kafka does not define."""
    return AclFilter(
        ResourceType(wire.resource_type_filter),
        wire.resource_name_filter,
        PatternType(getattr(wire, "pattern_type_filter", PatternType.LITERAL)),
        wire.principal_filter,
        wire.host_filter,
        Operation(wire.operation),
        Permission(wire.permission_type),
    )


def binding(acl: Acl) -> dict[str, Any]:
    """An ACL as DeleteAcls' matching_acls lists it."""
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "resource_type": int(acl.resource_type),
        "resource_name": acl.resource_name,
        "pattern_type": int(acl.pattern_type),
        "principal": acl.principal,
        "host": acl.host,
        "operation": int(acl.operation),
        "permission_type": int(acl.permission),
    }
