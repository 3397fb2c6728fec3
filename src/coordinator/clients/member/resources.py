"""`ResourceGroup`: service instances sharing named resources through a Kafka group.

A thin layer over `GroupMember` with the `resources` embedded protocol
(`rebalance.member.resources`): the callbacks and `owned()` speak resource names instead of
partitions. Any Kafka broker coordinates it (the coordinator never reads the protocol's bytes),
as it does Kafka Connect's workers. What "owning" guarantees is stated in docs/member.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence

from assignors.spec import TopicPartition
from coordinator.clients.member.group_member import GroupMember
from rebalance.member.resources import ResourceEmbedded, names

NamesCallback = Callable[[frozenset[str]], Awaitable[None]]


def _by_name(
    callback: NamesCallback | None,
) -> Callable[[frozenset[TopicPartition]], Awaitable[None]] | None:
    if callback is None:
        return None

    async def call(items: frozenset[TopicPartition]) -> None:
        await callback(names(items))

    return call


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
        rebalance_timeout_ms: int = 30_000,
        heartbeat_interval_ms: int = 1_000,
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
            on_assigned=_by_name(on_acquired),
            on_revoked=_by_name(on_released),
            on_lost=_by_name(on_lost),
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
        """The resources this instance may work on now (assigned, lease not expired)."""
        return names(self.member.owned())
