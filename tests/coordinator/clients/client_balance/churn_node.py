"""A client-balance node that churns: it registers random partitions, holds each a moment and
releases it, until it is killed. One JSON line per step on stdout, each written *after* the
coordinator answered the registration ("acked") and *before* the release is sent
("releasing"), so a reader knows what the node believed it held at any point.

`python churn_node.py BOOTSTRAP GROUP TOPIC SESSION_MS SEED`"""

from __future__ import annotations

import asyncio
import random
import sys

from coordinator.clients.client_balance import (
    ClientBalanceConfig,
    ClientBalanceConsumer,
    ClientBalanceError,
)
from coordinator.testing.client_balance_node import say


async def churn(bootstrap: str, group: str, topic: str, session_ms: int, seed: int) -> None:
    rng = random.Random(seed)
    config = ClientBalanceConfig(
        bootstrap, group, client_id=f"churn-{seed}", session_timeout_ms=session_ms,
        occupied_retry_backoff_ms=0,
    )  # fmt: skip
    node = ClientBalanceConsumer(config)
    await node.start([topic], -1, 0)
    say(event="started", member=node.consumer_id)
    keys = sorted(await node.partition_meta())
    while True:
        key = rng.choice(keys)
        if key in node.registered():
            say(event="releasing", key=key)
            await node.disconnect(key)
        else:
            try:
                await node.connect(key)
            except ClientBalanceError as exc:
                say(event="refused", key=key, code=int(exc.code))
            else:
                say(event="acked", key=key)
        say(event="held", keys=sorted(node.registered()))
        await asyncio.sleep(rng.uniform(0, 0.05))


if __name__ == "__main__":
    bootstrap, group, topic, session_ms, seed = sys.argv[1:]
    asyncio.run(churn(bootstrap, group, topic, int(session_ms), int(seed)))
