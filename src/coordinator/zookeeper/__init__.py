"""ZooKeeper mode: Kafka 0.8's ZooKeeper-coordinated consumers against this node.

`broker` registers the node in ZooKeeper as a 0.8 broker, `consumer` and `member` are 0.8's
consumer (group registry, rebalance, fetcher), `offsets_view` is ConsumerOffsetChecker's table,
`server` runs a real ZooKeeper for tests and demos, through `processes` (a server started as a
child process, waited for and stopped; the testing peers start theirs with it too).

May import: the folders under it on the ladder (`coordinator.clients`, `groups`, `node`,
`partition_log`, `wire`) and the root modules.
"""
