"""The two ZooKeeper write patterns of Kafka 0.8's `ZkUtils`, on our asyncio session.

* `create_ephemeral_expect_conflict` (`createEphemeralPathExpectConflictHandleZKBug`): create an
  ephemeral znode; if it exists with exactly our data, our own create succeeded before a lost
  reply; if it exists with data the caller recognises as its own (ZOOKEEPER-1740: an ephemeral
  znode outliving its expired session, or a restart faster than the session timeout), wait
  `backoff_s` and try again until ZooKeeper removes it; otherwise it is somebody else's and
  `NodeExists` propagates. If it vanished meanwhile, retry at once.
* `update_persistent` (`updatePersistentPath`): set, or create with parents if missing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from coordinator.zookeeper.client import NodeExists, NoNode, ZooKeeper

log = logging.getLogger("coordinator.zookeeper")


async def create_ephemeral_expect_conflict(
    zk: ZooKeeper,
    path: str,
    data: bytes,
    is_ours: Callable[[bytes], bool],
    backoff_s: float,
) -> None:
    while True:
        try:
            await zk.create(path, data, ephemeral=True, makepath=True)
            return
        except NodeExists:
            stored = await zk.get_or_none(path)
            if stored is None:
                continue  # deleted in between: create it now
            if stored[0] == data:
                log.info("%s exists with our data (a lost reply to our create); this is ok", path)
                return
            if not is_ours(stored[0]):
                raise
            log.info(
                "%s was written by us in an earlier session; waiting %.1f s for ZooKeeper to "
                "remove it",
                path,
                backoff_s,
            )
            await asyncio.sleep(backoff_s)


async def update_persistent(zk: ZooKeeper, path: str, data: bytes) -> None:
    try:
        await zk.set(path, data)
    except NoNode:
        try:
            await zk.create(path, data, makepath=True)
        except NodeExists:
            await zk.set(path, data)
