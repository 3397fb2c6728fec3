"""Cluster mode on PostgreSQL: several nodes share the group coordinator, fenced by epochs.

`connection` opens the driver's connections (psycopg 3, the `[cluster]` extra) and turns their
failures into one line; `schema` creates and migrates the tables, versioned; `leases` holds
this node's `__consumer_offsets` partitions by lease and epoch (`LeaseManager`, an
`Ownership`); `store` is the `RecordStore` whose every write PostgreSQL fences by those epochs
(`PostgresRecordStore`). How it works: docs/cluster.md.

May import: `coordinator.groups`, `coordinator.node`, `coordinator.partition_log`,
`coordinator.wire` and the root modules.
"""
