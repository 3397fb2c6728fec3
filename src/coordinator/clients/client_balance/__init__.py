"""An asyncio client for client-balance groups: TubeMQ's `ClientBalanceConsumer` in Python.

* `consumer`    `ClientBalanceConsumer`: the 17 operations (start, partition metadata,
                connect/disconnect a partition with a bootstrap offset, the registered set,
                offsets, get a message and confirm it, shutdown) over our wire APIs, from:
* `config`      `ClientBalanceConfig` (TubeMQ's `ConsumerConfig`);
* `connections` one connection to the group's coordinator, one per partition leader;
* `requests`    the node's requests to the coordinator, one function each;
* `fetching`    one Fetch per leader into the partitions' buffers; where a partition starts;
* `holdings`    the registered partitions in round-robin order, their batches booked and
                confirmed;
* `partitions`  a registered partition's state, TubeMQ's partition keys, `ConsumeResult`,
                `OffsetInfo`;
* `allocation`  the default modulo split (`tubemq-modulo`: unsigned Java `String.hashCode` of the
                partition key, modulo the source count) and a ready-made allocation loop (TubeMQ
                leaves it to the application; so does this client, with the loop for the
                common case);
* `errors`      `ClientBalanceError` and the client-side codes;
* `node_process`, `demo`  one node as a process; `rebalance demo --protocol client-balance`.

The extension APIs' messages, which the server's API modules share, are
`coordinator.wire.client_balance_schema`: a node does not import this package.

docs/client-balance.md maps each TubeMQ method onto this API.
"""

from __future__ import annotations

from coordinator.clients.client_balance.allocation import allocate, modulo_assigned
from coordinator.clients.client_balance.config import ClientBalanceConfig
from coordinator.clients.client_balance.consumer import ClientBalanceConsumer
from coordinator.clients.client_balance.errors import ClientBalanceError, ClientCode
from coordinator.clients.client_balance.partitions import ConsumeResult, OffsetInfo

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
