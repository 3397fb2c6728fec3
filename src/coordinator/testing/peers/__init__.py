"""Other brokers run beside ours as peers: the oracle for behaviour and the peer for performance.

* `kafka_broker`   Apache Kafka's own broker (single-node combined-mode KRaft) on loopback, from
                   the jars `scripts/ensure-kafka` resolves; tests and benchmarks both start it;
* `pytest_plugin`  the session-scoped `kafka_broker` fixture (marker `kafka_broker`) and
                   `kafka_brokers` for brokers with other settings.

Peers are test dependencies fetched by the project's scripts into git-ignored folders, never
part of the product. May import the standard library, pytest (in `pytest_plugin` only) and
`coordinator.zookeeper.server`'s process helpers; nothing of the node.
"""
