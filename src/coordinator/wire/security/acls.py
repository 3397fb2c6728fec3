"""ACLs as Kafka models them, and the decision whether a principal may do an operation.

An `Acl` (Kafka's AclBinding) says that `principal` (`User:alice`, `User:*` for everyone)
connecting from `host` (`*`: anywhere) is allowed or denied `operation` on the resources named
by `resource_type` (TOPIC, GROUP, CLUSTER, ...) and a pattern: LITERAL matches the name itself
(`*`: every resource of the type), PREFIXED every name starting with it. An `AclFilter` selects
ACLs (DescribeAcls, DeleteAcls): ANY and None match everything, and the MATCH pattern type
selects the ACLs that apply to one resource name.

`Authorizer.authorize` decides as Kafka's authorizers do:
- a principal in `super.users` may do anything;
- an ACL applies if its resource type matches and its pattern matches the name;
- no ACL applies to the resource at all: `allow.everyone.if.no.acl.found` decides (default no);
- a DENY for the principal (or `User:*`), the host (or `*`) and the operation (or ALL) wins;
- then an ALLOW likewise; READ, WRITE, DELETE and ALTER imply DESCRIBE, and ALTER_CONFIGS
  implies DESCRIBE_CONFIGS;
- otherwise denied.
Decisions are cached until the ACLs change (the group APIs ask on every heartbeat).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import Final


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class Permission(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


CLUSTER_NAME: Final = "kafka-cluster"
WILDCARD: Final = "*"
WILDCARD_PRINCIPAL: Final = "User:*"

_IMPLIED: Final = {
    Operation.DESCRIBE: frozenset(
        {Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}
    ),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS}),
}


class InvalidAcl(ValueError):
    """An ACL that cannot be created; the message says why."""


@dataclass(frozen=True, slots=True)
class Acl:
    """One ACL (Kafka's AclBinding)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    def check(self) -> Acl:
        """This ACL if it can be created, else `InvalidAcl` (Kafka's CreateAcls rules)."""
        if self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            raise InvalidAcl(f"resource type {self.resource_type.name} is not a resource")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidAcl(f"pattern type {self.pattern_type.name} cannot be stored")
        if self.operation in (Operation.ANY, Operation.UNKNOWN):
            raise InvalidAcl(f"operation {self.operation.name} is not an operation")
        if self.permission not in (Permission.ALLOW, Permission.DENY):
            raise InvalidAcl(f"permission {self.permission.name} is not ALLOW or DENY")
        kind, sep, name = self.principal.partition(":")
        if not sep or not kind or not name:
            raise InvalidAcl(f"principal {self.principal!r} is not TYPE:NAME (e.g. User:alice)")
        if not self.resource_name:
            raise InvalidAcl("the resource name is empty")
        if self.resource_type is ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise InvalidAcl(f"the cluster resource is named {CLUSTER_NAME}")
        return self

    def names(self, name: str) -> bool:
        """Whether this ACL's pattern covers the resource `name`."""
        if self.pattern_type is PatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return self.resource_name in (name, WILDCARD)


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Selects ACLs: ANY / None match every value (DescribeAcls, DeleteAcls)."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: Operation = Operation.ANY
    permission: Permission = Permission.ANY

    def matches(self, acl: Acl) -> bool:
        if self.resource_type is not ResourceType.ANY and acl.resource_type != self.resource_type:
            return False
        if not self._pattern_matches(acl):
            return False
        return (
            (self.principal is None or acl.principal == self.principal)
            and (self.host is None or acl.host == self.host)
            and (self.operation is Operation.ANY or acl.operation == self.operation)
            and (self.permission is Permission.ANY or acl.permission == self.permission)
        )

    def _pattern_matches(self, acl: Acl) -> bool:
        if self.pattern_type is PatternType.MATCH:
            return self.resource_name is None or acl.names(self.resource_name)
        if self.pattern_type is not PatternType.ANY and acl.pattern_type != self.pattern_type:
            return False
        return self.resource_name is None or acl.resource_name == self.resource_name


class Authorizer:
    """The decision (see the module docstring) over the ACLs `acls()` returns."""

    def __init__(
        self,
        acls: Callable[[], Iterable[Acl]],
        *,
        super_users: Iterable[str] = (),
        allow_if_no_acl: bool = False,
    ) -> None:
        self._acls = acls
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._cache: dict[tuple[str, str, Operation, ResourceType, str], bool] = {}

    def acls_changed(self) -> None:
        self._cache.clear()

    def authorize(
        self, principal: str, host: str, operation: Operation, kind: ResourceType, name: str
    ) -> bool:
        key = (principal, host, operation, kind, name)
        allowed = self._cache.get(key)
        if allowed is None:
            allowed = self._decide(principal, host, operation, kind, name)
            if len(self._cache) > 100_000:
                self._cache.clear()
            self._cache[key] = allowed
        return allowed

    def authorize_any(
        self, principal: str, host: str, operation: Operation, kind: ResourceType
    ) -> bool:
        """Whether the principal may do `operation` on some resource of the type (Kafka's
        `authorizeByResourceType`, which InitProducerId asks for WRITE on any topic): an ALLOW
        whose pattern no DENY of the principal covers."""
        if principal in self.super_users:
            return True
        of_kind = [a for a in self._acls() if a.resource_type == kind]
        if not of_kind:
            return self.allow_if_no_acl
        mine = [
            a
            for a in of_kind
            if a.principal in (principal, WILDCARD_PRINCIPAL) and a.host in (host, WILDCARD)
        ]
        denies = [
            a
            for a in mine
            if a.permission is Permission.DENY and a.operation in (operation, Operation.ALL)
        ]
        if any(
            a.pattern_type is PatternType.LITERAL and a.resource_name == WILDCARD for a in denies
        ):
            return False
        allowing = _IMPLIED.get(operation, frozenset({operation})) | {Operation.ALL}
        for allow in mine:
            if allow.permission is not Permission.ALLOW or allow.operation not in allowing:
                continue
            covered = any(
                allow.resource_name.startswith(d.resource_name)
                if d.pattern_type is PatternType.PREFIXED
                else (
                    allow.pattern_type is PatternType.LITERAL
                    and d.resource_name == allow.resource_name
                )
                for d in denies
            )
            if not covered:
                return True
        return False

    def _decide(
        self, principal: str, host: str, operation: Operation, kind: ResourceType, name: str
    ) -> bool:
        if principal in self.super_users:
            return True
        applying = [a for a in self._acls() if a.resource_type == kind and a.names(name)]
        if not applying:
            return self.allow_if_no_acl
        mine = [
            a
            for a in applying
            if a.principal in (principal, WILDCARD_PRINCIPAL) and a.host in (host, WILDCARD)
        ]
        if any(
            a.permission is Permission.DENY and a.operation in (operation, Operation.ALL)
            for a in mine
        ):
            return False
        allowing = _IMPLIED.get(operation, frozenset({operation})) | {Operation.ALL}
        return any(a.permission is Permission.ALLOW and a.operation in allowing for a in mine)
