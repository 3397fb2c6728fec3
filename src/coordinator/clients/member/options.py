"""What `GroupMember`'s options make: the pure member of the group protocol asked for (classic
or KIP-848's consumer protocol) with its settings, the bootstrap servers parsed, the callbacks
checked; each bad option refused with a one-line error at construction."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence

from assignors.spec import TopicPartition
from rebalance.member import ClassicMember, ConsumerEmbedded, EmbeddedProtocol, MemberConfig
from rebalance.member.consumer import ConsumerMember, ConsumerMemberConfig

Callback = Callable[[frozenset[TopicPartition]], Awaitable[None] | None]
"""`on_assigned`, `on_revoked`, `on_lost`: a coroutine function or a plain function."""


def require_callable(name: str, callback: object) -> None:
    """Refuse a callback that cannot be called at construction, not at the first rebalance."""
    if callback is not None and not callable(callback):
        raise TypeError(f"{name} must be a function or a coroutine function, not {callback!r}")


def parse_servers(servers: str | Sequence[str]) -> list[tuple[str, int]]:
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out: list[tuple[str, int]] = []
    for item in items:
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"bootstrap server must be HOST:PORT, not {item!r}")
        out.append((host, int(port)))
    if not out:
        raise ValueError("no bootstrap servers")
    return out


def build_member(
    group_id: str,
    topics: Iterable[str],
    *,
    topic_regex: str | None,
    protocol: EmbeddedProtocol | None,
    group_protocol: str,
    assignors: Sequence[str],
    server_assignor: str | None,
    group_instance_id: str | None,
    session_timeout_ms: int,
    rebalance_timeout_ms: int,
    heartbeat_interval_ms: int | None,
    retry_backoff_ms: int,
    client_id: str,
) -> ClassicMember | ConsumerMember:
    """The pure member for `group_protocol` ("classic" or "consumer"); see `GroupMember`."""
    if group_protocol == "consumer":
        if heartbeat_interval_ms is not None:
            raise ValueError(
                "heartbeat_interval_ms is the coordinator's under group_protocol='consumer' "
                "(group.consumer.heartbeat.interval.ms, sent in each heartbeat's answer)"
            )
        # KIP-848: the session timeout is the coordinator's (group.consumer.session.timeout.ms);
        # the value given here is what the member assumes for its ownership lease.
        return ConsumerMember(
            ConsumerMemberConfig(
                group_id,
                str(uuid.uuid4()),
                tuple(topics),
                topic_regex=topic_regex,
                group_instance_id=group_instance_id,
                server_assignor=server_assignor,
                rebalance_timeout_ms=rebalance_timeout_ms,
                session_timeout_ms=session_timeout_ms,
                retry_backoff_ms=retry_backoff_ms,
                client_id=client_id,
            )
        )
    if group_protocol == "classic":
        if topic_regex is not None:
            # DIFFERS: Java's classic consumer matches a pattern against its own metadata
            # and subscribes to the names; here a regex is the consumer protocol's (KIP-848,
            # matched by the coordinator) only.
            raise ValueError("topic_regex needs group_protocol='consumer'")
        if protocol is None:
            protocol = ConsumerEmbedded(tuple(topics), tuple(assignors))
        return ClassicMember(
            MemberConfig(
                group_id,
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms,
                heartbeat_interval_ms=3_000
                if heartbeat_interval_ms is None
                else heartbeat_interval_ms,
                retry_backoff_ms=retry_backoff_ms,
                group_instance_id=group_instance_id,
                client_id=client_id,
            ),
            protocol,
        )
    raise ValueError(f"group_protocol must be 'classic' or 'consumer', not {group_protocol!r}")
