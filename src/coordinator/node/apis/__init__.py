"""Every Kafka API this server answers: one module per API key, all in this folder.

Each module declares `API_KEY`, the advertised `VERSIONS` and `handle(request, api_version, ctx)`
(the contract is in `coordinator.node.contract`), maps the request's fields that differ by
version, and holds no protocol logic of its own: the group APIs hand a command to the pure core
(`rebalance`) through the `GroupRuntime`; the others read or write the partition log.

`BUILTIN_APIS` are answered by every node (`builtin_registry`); the group APIs live in
`coordinator.groups.apis` and are registered by the group coordinator extension next to them.
Adding an API: write its module here and add it to the tuple (a group API: in
`coordinator.groups.apis`).
"""

from __future__ import annotations

from types import ModuleType

from coordinator.node.apis import (
    alter_configs,
    alter_partition_reassignments,
    alter_replica_log_dirs,
    alter_user_scram_credentials,
    api_versions,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_records,
    delete_topics,
    describe_acls,
    describe_cluster,
    describe_configs,
    describe_log_dirs,
    describe_topic_partitions,
    describe_user_scram_credentials,
    elect_leaders,
    fetch,
    find_coordinator,
    incremental_alter_configs,
    init_producer_id,
    list_config_resources,
    list_offsets,
    list_partition_reassignments,
    metadata,
    produce,
    sasl_authenticate,
    sasl_handshake,
)
from coordinator.node.contract import ApiRegistry

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
    describe_topic_partitions,
    describe_configs,
    alter_configs,
    incremental_alter_configs,
    list_config_resources,
    describe_log_dirs,
    alter_replica_log_dirs,
    elect_leaders,
    alter_partition_reassignments,
    list_partition_reassignments,
    sasl_handshake,
    sasl_authenticate,
    create_acls,
    describe_acls,
    delete_acls,
    describe_user_scram_credentials,
    alter_user_scram_credentials,
)


def builtin_registry() -> ApiRegistry:
    """A registry with the APIs every node answers (the group APIs are added by their extension)."""
    registry = ApiRegistry()
    for module in BUILTIN_APIS:
        registry.register(module)
    return registry
