"""A cluster node: the group coordinator on the fenced PostgreSQL store, partitions by lease.

`ClusterExtension` is the node extension `rebalance serve --cluster URL` runs instead of the
plain group extension (`coordinator.groups.extension`, which it wraps). Entering it:

1. starts a `LeaseManager` for this node (creates or migrates the schema, registers the node id:
   a `ClusterError` in one line if it is live elsewhere) and makes it the broker's `Ownership`,
   so FindCoordinator, Metadata and every group reply ask the leases; then enters `topics`, the
   cluster's topic catalogue (`coordinator.cluster.topic_catalogue`), when given;
2. enters the group extension with the `PostgresRecordStore` fenced by those leases; its runtime
   starts with the partitions already held and no other;
3. from then on every lease acquired is `runtime.take_over(partition)` (Kafka's onElection: a
   load, COORDINATOR_LOAD_IN_PROGRESS meanwhile) and every lease lost `runtime.resign(partition)`
   (onResignation: parked requests NOT_COORDINATOR).

`hand_over()` (SIGTERM, before the server drains its connections) resigns every partition and
releases every lease in one transaction, so peers take them over at once instead of after the
lease; leaving the extension without it (a failed start) lets the leases lapse.

It claims the lease settings of `--set` (`cluster.lease.ms`, `cluster.lease.renew.ms`: see
`coordinator.cluster.leases`); the partition count is the group coordinator's
`offsets.topic.num.partitions`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from coordinator.cluster.connection import driver, redacted
from coordinator.cluster.leases import SETTING_NAMES, LeaseManager, LeaseSettings
from coordinator.cluster.store import PostgresRecordStore
from coordinator.errors import UsageError
from coordinator.groups.extension import GroupCoordinatorExtension
from coordinator.groups.runtime import GroupRuntime
from coordinator.groups.store.base import RecordStore
from coordinator.node.contract import Broker
from coordinator.node.ownership import NodeAddress

if TYPE_CHECKING:
    from coordinator.node.app import Extension

log = logging.getLogger("coordinator.cluster")

LEASE_KEYS = frozenset(key for key in SETTING_NAMES if key.startswith("cluster."))
"""The `--set` keys this extension claims (the partition count is the group coordinator's)."""


def check_url(url: str) -> str:
    """`url` if it is a PostgreSQL URL (`postgresql://` or `postgres://`), else `UsageError`."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("postgresql", "postgres") or not rest:
        raise UsageError(f"--cluster wants postgresql://USER@HOST:PORT/DB, not {redacted(url)!r}")
    return url


class ClusterExtension:
    """Cluster mode's node extension, and the claim of its lease settings."""

    def __init__(
        self, url: str, groups: GroupCoordinatorExtension, *, topics: Extension | None = None
    ) -> None:
        driver()  # the [cluster] extra, named in one line, before anything starts
        self.url = check_url(url)
        self.groups = groups
        #: Entered once the node is registered, before the group coordinator: the cluster's
        #: topic catalogue (`coordinator.cluster.topic_catalogue`).
        self.topics = topics
        self._lease_settings: dict[str, str] = {}
        self.leases: LeaseManager | None = None
        self.runtime: GroupRuntime | None = None
        self._handed_over = False

    # -- the `--set` claim --------------------------------------------------------------------
    def owns(self, key: str) -> bool:
        return key in LEASE_KEYS

    def settle(self, settings: Mapping[str, str]) -> None:
        self._lease_settings = {**self._lease_settings, **settings}
        self.lease_settings()  # a bad value fails now, before the node starts

    def lease_settings(self) -> LeaseSettings:
        partitions = self.groups.config.offsets_topic_num_partitions
        return LeaseSettings.from_settings(
            {**self._lease_settings, "offsets.topic.num.partitions": str(partitions)}
        )

    # -- the extension ------------------------------------------------------------------------
    @asynccontextmanager
    async def __call__(self, broker: Broker) -> AsyncIterator[GroupRuntime]:
        # The address peers name this node by: the advertised one, as the server will set it.
        broker.replace_address(broker.host, broker.port)
        node = NodeAddress(broker.node_id, broker.host, broker.port)
        ready = asyncio.Event()
        leases = LeaseManager(
            self.url,
            node,
            settings=self.lease_settings(),
            on_acquired=lambda partition, epoch: self._acquired(ready, partition, epoch),
            on_lost=self._lost,
        )
        async with contextlib.AsyncExitStack() as stack:
            await leases.start()
            self.leases = leases
            stack.push_async_callback(leases.close)
            broker.ownership = leases
            if self.topics is not None:  # the core starts from the cluster's topics
                await stack.enter_async_context(self.topics(broker))

            def open_store(_: Broker) -> RecordStore:
                return PostgresRecordStore(self.url, leases)

            self.groups.open_store = open_store
            runtime = await stack.enter_async_context(self.groups(broker))
            self.runtime = runtime
            ready.set()
            log.info(
                "cluster node %d (%s:%d) in the cluster at %s, %d partitions held",
                node.node_id, node.host, node.port, redacted(self.url), len(leases.held()),
            )  # fmt: skip
            yield runtime

    async def _acquired(self, ready: asyncio.Event, partition: int, epoch: int) -> None:
        await ready.wait()  # leases come before the runtime exists: it loads them once started
        if self.runtime is not None and not self._handed_over:
            log.info("partition %d: taking over at epoch %d", partition, epoch)
            await self.runtime.take_over(partition)

    async def _lost(self, partition: int) -> None:
        if self.runtime is not None:
            log.info("partition %d: resigning", partition)
            self.runtime.resign(partition)

    async def hand_over(self) -> None:
        """Resign every partition and release every lease now (a graceful stop)."""
        if self.leases is None or self._handed_over:
            return
        self._handed_over = True
        held = len(self.leases.held())
        await self.leases.release_all()
        log.info("handed over %d partitions", held)
