"""Cluster mode on PostgreSQL: several nodes share the group coordinator, fenced by epochs.

`connection` opens the driver's connections (psycopg 3, the `[cluster]` extra) and turns their
failures into one line; `schema` creates and migrates the tables, versioned; `leases` holds
this node's `__consumer_offsets` partitions by lease and epoch (`LeaseManager`, an
`Ownership`); `store` is the `RecordStore` whose every write PostgreSQL fences by those epochs
(`PostgresRecordStore`); `topic_catalogue` decides topic changes for every node and keeps
this node's topics following it (`TopicCatalogue`, the node's `TopicAdmin`; its tables in
`topic_tables`). How it works: docs/cluster.md.

May import: `coordinator.groups`, `coordinator.node`, `coordinator.partition_log`,
`coordinator.wire` and the root modules.
"""
