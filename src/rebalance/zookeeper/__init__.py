"""Kafka 0.8's ZooKeeper-coordinated consumer: its pure parts (no I/O, no clock).

* `scala_order` — the order in which Kafka 0.8 (Scala 2.10) iterates its maps, which is the key
  order of every JSON document it writes to ZooKeeper;
* `formats` — the znode paths and the JSON of broker, topic and consumer registrations,
  byte-for-byte as 0.8 writes them, and tolerant readers for them;
* `ids` — consumer ids and consumer thread ids, and their order;
* `topic_filter` — whitelist/blacklist subscriptions with 0.8's regex normalisation;
* `assignment` — the ownership decision of one consumer (range or roundrobin, per thread);
* `config` — the consumer settings that matter here, with 0.8's names and defaults.

The asyncio consumer and broker registration that use them live in `coordinator.zookeeper`.
"""
