"""Every Kafka API this server answers: one module per API key, all in this folder.

Each module declares `API_KEY`, the advertised `VERSIONS` and `handle(request, api_version, ctx)`
(the contract is in `coordinator.apis.contract`), maps the request's fields that differ by
version, and holds no protocol logic of its own: the group APIs hand a command to the pure core
(`rebalance`) through the `GroupRuntime`; the others read or write the partition log.

`BUILTIN_APIS` are answered by every node (`builtin_registry`); `GROUP_APIS` are registered by
the group coordinator extension (`coordinator.groups`) next to them. Adding an API: write its
module here and add it to one of the two tuples.
"""

from __future__ import annotations

from types import ModuleType

from coordinator.apis import (
    alter_configs,
    alter_user_scram_credentials,
    api_versions,
    client_balance_describe,
    client_balance_heartbeat,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_user_scram_credentials,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    partition_register,
    partition_release,
    produce,
    sasl_authenticate,
    sasl_handshake,
    sync_group,
)
from coordinator.apis.contract import ApiRegistry

BUILTIN_APIS: tuple[ModuleType, ...] = (
    api_versions,
    metadata,
    find_coordinator,
    produce,
    fetch,
    list_offsets,
    init_producer_id,
    create_topics,
    delete_topics,
    create_partitions,
    delete_records,
    describe_cluster,
    describe_configs,
    alter_configs,
    incremental_alter_configs,
    sasl_handshake,
    sasl_authenticate,
    create_acls,
    describe_acls,
    delete_acls,
    describe_user_scram_credentials,
    alter_user_scram_credentials,
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


def builtin_registry() -> ApiRegistry:
    """A registry with the APIs every node answers (the group APIs are added by their extension)."""
    registry = ApiRegistry()
    for module in BUILTIN_APIS:
        registry.register(module)
    return registry
