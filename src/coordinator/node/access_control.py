"""The node's access control when an authorizer is configured: its ACLs and their decision.

`authorizer.class.name` set to one of Kafka's ACL authorizers turns it on (without it, as on
Kafka, nothing is checked and the ACL APIs answer SECURITY_DISABLED). `super.users`
(`User:a;User:b`) may do anything; `allow.everyone.if.no.acl.found` decides for resources no ACL
names. What each API checks is in `coordinator.node.authorization`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Final, Protocol

from coordinator.node.acl_store import AclStore
from coordinator.wire.security.acls import Authorizer, Operation, ResourceType
from coordinator.wire.security.session import Session
from coordinator.wire.security.tls import ANONYMOUS


class RequestContext(Protocol):
    """What a decision reads of a request (`coordinator.node.contract.RequestContext`, whose
    module imports this one): the connection's session."""

    @property
    def session(self) -> Session | None: ...


AUTHORIZERS: Final = (
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
)


def parse_super_users(text: str) -> tuple[str, ...]:
    """`super.users`: principals separated by semicolons, each `TYPE:NAME`."""
    users = tuple(part.strip() for part in text.split(";") if part.strip())
    for user in users:
        kind, sep, name = user.partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"{user!r} is not a principal TYPE:NAME (e.g. User:admin)")
    return users


def check_authorizer(name: str) -> str:
    if name and name not in AUTHORIZERS:
        raise ValueError(f"{name} is not offered; use {' or '.join(AUTHORIZERS)}, or leave empty")
    return name


class AccessControl:
    """ACLs (durable) and the authorizer over them."""

    def __init__(
        self, data_dir: Path, *, super_users: Iterable[str] = (), allow_if_no_acl: bool = False
    ) -> None:
        self.authorizer = Authorizer(
            lambda: self.acls.all(), super_users=super_users, allow_if_no_acl=allow_if_no_acl
        )
        self.acls = AclStore(data_dir, self.authorizer.acls_changed)

    def close(self) -> None:
        self.acls.close()

    def allowed(
        self, ctx: RequestContext, operation: Operation, kind: ResourceType, name: str
    ) -> bool:
        """Whether the client of this request may do `operation` on the resource."""
        session = ctx.session
        principal = ANONYMOUS if session is None else session.principal
        host = "" if session is None else session.client_host
        return self.authorizer.authorize(principal, host, operation, kind, name)

    def allowed_somewhere(
        self, ctx: RequestContext, operation: Operation, kind: ResourceType
    ) -> bool:
        """Whether the client may do `operation` on some resource of the type."""
        session = ctx.session
        principal = ANONYMOUS if session is None else session.principal
        host = "" if session is None else session.client_host
        return self.authorizer.authorize_any(principal, host, operation, kind)
