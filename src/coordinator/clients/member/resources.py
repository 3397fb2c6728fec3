"""`ResourceGroup`: service instances sharing named resources through a Kafka group.

A thin layer over `GroupMember` with the `resources` embedded protocol
(`rebalance.member.resources`): the callbacks and `owned()` speak resource names instead of
partitions. Any Kafka broker coordinates it (the coordinator never reads the protocol's bytes),
as it does Kafka Connect's workers. What "owning" guarantees is stated in docs/member.md.

The defaults are Kafka Connect's worker settings (session 10 s, rebalance 60 s, heartbeat 3 s),
not the consumer's (45 s / 300 s / 3 s) that `GroupMember` takes: resources are held by service
instances that answer at once, not by a poll loop that may stall for minutes, so a crashed
instance's resources move after 10 s rather than 45 s.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from assignors.spec import TopicPartition
from coordinator.clients.member.group_member import GroupMember
from coordinator.clients.member.options import require_callable
from rebalance.member import Assigned, Change, Lost, MemberFailed, Revoked
from rebalance.member.resources import ResourceEmbedded, names

NamesCallback = Callable[[frozenset[str]], Awaitable[None] | None]
"""`on_acquired`, `on_released`, `on_lost`: a coroutine function or a plain function."""


@dataclass(frozen=True, slots=True)
class ResourceChange:
    """One change of this instance's share, as `GroupMember.changes()` reports partitions."""

    kind: str  # "acquired", "released" or "lost"
    resources: frozenset[str]


_KINDS: dict[type, str] = {Assigned: "acquired", Revoked: "released", Lost: "lost"}


def _by_name(
    name: str, callback: NamesCallback | None
) -> Callable[[frozenset[TopicPartition]], Awaitable[None]] | None:
    require_callable(name, callback)
    if callback is None:
        return None

    async def call(items: frozenset[TopicPartition]) -> None:
        outcome = callback(names(items))
        if inspect.isawaitable(outcome):
            await outcome

    return call


def _resource_change(change: Change) -> ResourceChange:
    return ResourceChange(_KINDS[type(change)], names(change.partitions))


class ResourceGroup:
    """This instance's share of `resources`, proportional to `weight`, kept in `group_id`."""

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str],
        group_id: str,
        resources: Iterable[str],
        *,
        weight: int = 1,
        protocol_type: str = "resources",
        cooperative: bool = True,
        on_acquired: NamesCallback | None = None,
        on_released: NamesCallback | None = None,
        on_lost: NamesCallback | None = None,
        group_instance_id: str | None = None,
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 60_000,
        heartbeat_interval_ms: int = 3_000,
        client_id: str = "rebalance-resources",
    ) -> None:
        self.member = GroupMember(
            bootstrap_servers,
            group_id,
            protocol=ResourceEmbedded(tuple(resources), weight, protocol_type, cooperative),
            group_instance_id=group_instance_id,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
            client_id=client_id,
            on_assigned=_by_name("on_acquired", on_acquired),
            on_revoked=_by_name("on_released", on_released),
            on_lost=_by_name("on_lost", on_lost),
        )

    async def __aenter__(self) -> ResourceGroup:
        self.member.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.member.close()

    def start(self) -> None:
        self.member.start()

    async def close(self) -> None:
        await self.member.close()

    def kill(self) -> None:
        self.member.kill()

    def owned(self) -> frozenset[str]:
        """The resources this instance may work on now: `GroupMember.owned()`'s contract, by
        name (from just before `on_acquired` until `on_released` returned)."""
        return names(self.member.owned())

    async def changes(self) -> AsyncIterator[ResourceChange]:
        """Every change of this instance's share from now on, in order, until it stops."""
        async for change in self.member.changes():
            yield _resource_change(change)

    async def wait_stable(self, timeout_s: float | None = None) -> frozenset[str]:
        """Wait until the instance holds its share with every callback done."""
        return names(await self.member.wait_stable(timeout_s))

    @property
    def failure(self) -> MemberFailed | None:
        """The error that stopped the instance for good (None while it runs or left cleanly)."""
        return self.member.failure

    @property
    def generation(self) -> int:
        return self.member.generation
