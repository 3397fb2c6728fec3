"""The group APIs: one module per API key, registered by the group coordinator extension.

Each module declares `API_KEY`, the advertised `VERSIONS` and `handle(request, api_version, ctx)`
(the contract is in `coordinator.node.contract`) and hands a command to the pure core
(`rebalance`) through the `GroupRuntime`. `GROUP_APIS` are registered by
`coordinator.groups.extension` next to the node's own APIs (`coordinator.node.apis`).
"""

from __future__ import annotations

from types import ModuleType

from coordinator.groups.apis import (
    client_balance_describe,
    client_balance_heartbeat,
    consumer_group_describe,
    consumer_group_heartbeat,
    delete_groups,
    describe_groups,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    partition_register,
    partition_release,
    sync_group,
)

GROUP_APIS: tuple[ModuleType, ...] = (
    offset_commit,
    offset_fetch,
    join_group,
    heartbeat,
    leave_group,
    sync_group,
    describe_groups,
    list_groups,
    delete_groups,
    offset_delete,
    consumer_group_heartbeat,
    consumer_group_describe,
    # Client-balance groups (TubeMQ): extension keys 10000-10003, docs/client-balance.md.
    client_balance_heartbeat,
    partition_register,
    partition_release,
    client_balance_describe,
)
