"""One module per Kafka API key, each with `API_KEY`, `VERSIONS` and `handle`.

See `coordinator.wire.handlers` for the contract. `BUILTIN_APIS` are the ones the server
infrastructure answers itself; the group coordinator registers the group APIs next to them.
"""

from coordinator.wire.apis import (
    alter_configs,
    api_versions,
    create_partitions,
    create_topics,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    fetch,
    find_coordinator,
    incremental_alter_configs,
    init_producer_id,
    list_offsets,
    metadata,
    produce,
)

BUILTIN_APIS = (
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
)

__all__ = ["BUILTIN_APIS"]
