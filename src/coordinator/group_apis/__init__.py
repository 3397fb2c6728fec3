"""The group APIs: kio requests -> core commands, core replies -> version-agnostic responses.

One module per API key, as the built-in APIs are. Each declares `API_KEY`, the advertised
`VERSIONS` and `handle(request, api_version, ctx)`, and holds no protocol logic: the decisions
are the core's (`rebalance`); the module only maps fields that differ by version. The
`GroupRuntime` serving them is found in `ctx.broker.services`.
"""

from __future__ import annotations

from types import ModuleType

from coordinator.group_apis import (
    delete_groups,
    describe_groups,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    sync_group,
)

MODULES: tuple[ModuleType, ...] = (
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
)
