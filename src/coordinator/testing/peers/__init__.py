"""Other brokers run beside ours as peers: the oracle for behaviour and the peer for performance.

* `kafka_broker`   Apache Kafka's own broker (single-node combined-mode KRaft) on loopback, from
                   the jars `scripts/ensure-kafka` resolves; tests and benchmarks both start it;
* `kfake`          franz-go's kfake, a fake Kafka cluster in Go, as one broker on a free loopback
                   port (`.peers/kfake/kfake-server`, built by `scripts/ensure-kfake`): another
                   broker for `rebalance conformance` to report on;
* `postgresql`     a PostgreSQL server from Debian's package (`scripts/ensure-postgresql`) on a
                   temporary data dir and a free loopback port, for the cluster tests and
                   benchmarks;
* `pytest_plugin`  the session-scoped `kafka_broker` fixture (marker `kafka_broker`) and
                   `kafka_brokers` for brokers with other settings; `kfake_broker` and
                   `kfake_brokers` (marker `kfake_broker`) alike; `postgresql_server`,
                   `postgresql` and `postgresql_database` (marker `postgresql`).

Peers are test dependencies fetched or installed by the project's scripts, never part of the
product. May import the standard library, pytest and psycopg (in `pytest_plugin` only) and
`coordinator.zookeeper.server`'s process helpers; nothing of the node.
"""
