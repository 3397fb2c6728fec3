"""An asyncio client for client-balance groups: TubeMQ's `ClientBalanceConsumer` in Python.

* `consumer`    `ClientBalanceConsumer`: the 17 operations (start, partition metadata,
                connect/disconnect a partition with a bootstrap offset, the registered set,
                offsets, get a message and confirm it, shutdown) over our wire APIs;
* `allocation`  the default modulo split (`tubemq-modulo`: unsigned Java `String.hashCode` of the
                partition key, modulo the source count) and a ready-made allocation loop (TubeMQ
                leaves it to the application; so does this client, with the loop for the
                common case);
* `errors`      `ClientBalanceError` and the client-side codes;
* `schema`      the extension APIs' messages, shared with the server's API modules
                (`coordinator/apis/client_balance_*.py`, `partition_*.py`);
* `node_process`, `demo`  one node as a process; `rebalance demo --protocol client-balance`.

docs/client-balance.md maps each TubeMQ method onto this API.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coordinator.client_balance.allocation import allocate, modulo_assigned
    from coordinator.client_balance.consumer import (
        ClientBalanceConfig,
        ClientBalanceConsumer,
        ConsumeResult,
        OffsetInfo,
    )
    from coordinator.client_balance.errors import ClientBalanceError, ClientCode

# The client is loaded at the first use of one of its names: a node imports this package only
# for `schema` (its API modules), and the client brings the wire client, kio's record readers,
# crc32c and the ZooKeeper fetcher with it (about 2 MB of an idle node's memory).
_HOMES = {
    "allocate": "allocation",
    "modulo_assigned": "allocation",
    "ClientBalanceConfig": "consumer",
    "ClientBalanceConsumer": "consumer",
    "ConsumeResult": "consumer",
    "OffsetInfo": "consumer",
    "ClientBalanceError": "errors",
    "ClientCode": "errors",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ClientBalanceConfig",
    "ClientBalanceConsumer",
    "ClientBalanceError",
    "ClientCode",
    "ConsumeResult",
    "OffsetInfo",
    "allocate",
    "modulo_assigned",
]
