"""ZooKeeper paths and znode contents of Kafka 0.8, byte-for-byte as 0.8.2 writes them.

Writers follow `kafka.utils.Json.encode`: no spaces, strings quoted *without* escaping (Kafka's
own caveat; only wildcard subscriptions are escaped first, by `Utils.JSONEscapeString`), map
entries in Scala's iteration order (`scala_order`). Readers accept any valid JSON, as 0.8's
`Json.parseFull` does, and raise `FormatError` on anything else.

Layout (code, not the 0.8 docs, which still describe 0.7 in places):

    /brokers/ids/<id>                         ephemeral  {"jmx_port":-1,"timestamp":"<ms>",
                                                          "host":"<h>","version":1,"port":<p>}
    /brokers/topics/<topic>                   persistent {"version":1,"partitions":{"<p>":[ids]}}
    /consumers/<group>/ids/<consumer id>      ephemeral  {"version":1,"subscription":{..},
                                                          "pattern":"static","timestamp":"<ms>"}
    /consumers/<group>/owners/<topic>/<p>     ephemeral  <consumer thread id>
    /consumers/<group>/offsets/<topic>/<p>    persistent <offset>
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rebalance.zookeeper.scala_order import immutable_map_order, mutable_map_order

BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
CONSUMERS = "/consumers"
REGISTRATION_VERSION = 1
NO_JMX_PORT = -1
STATIC, WHITE_LIST, BLACK_LIST = "static", "white_list", "black_list"
PATTERNS = (STATIC, WHITE_LIST, BLACK_LIST)


class FormatError(ValueError):
    """A znode's content is not what Kafka 0.8 writes there."""


# -- paths (ZkUtils, ZKGroupDirs, ZKGroupTopicDirs) -------------------------------------------


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def group_dir(group: str) -> str:
    return f"{CONSUMERS}/{group}"


def consumer_registry_dir(group: str) -> str:
    return f"{group_dir(group)}/ids"


def consumer_path(group: str, consumer_id: str) -> str:
    return f"{consumer_registry_dir(group)}/{consumer_id}"


def owners_dir(group: str, topic: str | None = None) -> str:
    return f"{group_dir(group)}/owners" + (f"/{topic}" if topic is not None else "")


def owner_path(group: str, topic: str, partition: int) -> str:
    return f"{owners_dir(group, topic)}/{partition}"


def offsets_dir(group: str, topic: str | None = None) -> str:
    return f"{group_dir(group)}/offsets" + (f"/{topic}" if topic is not None else "")


def offset_path(group: str, topic: str, partition: int) -> str:
    return f"{offsets_dir(group, topic)}/{partition}"


# -- Json.encode ----------------------------------------------------------------------------


class ScalaMap(dict[Any, Any]):
    """A map whose (insertion) order is already the order Scala iterates it in."""


def scala_map(pairs: Sequence[tuple[Any, Any]]) -> ScalaMap:
    """`Map(pairs: _*)`: insertion order up to four entries, hash-trie order beyond."""
    values = dict(pairs)
    return ScalaMap((key, values[key]) for key in immutable_map_order([k for k, _ in pairs]))


def encode(value: object) -> str:
    """`kafka.utils.Json.encode`: strings are quoted as they are (not escaped)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{encode(k)}:{encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Iterable):
        return "[" + ",".join(encode(item) for item in value) + "]"
    raise TypeError(f"Json.encode cannot encode {type(value).__name__}")


def json_escape(text: str) -> str:
    """`Utils.JSONEscapeString`: what 0.8 applies to a wildcard subscription's regex."""
    escapes = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n",
               "\r": "\\r", "\t": "\\t"}  # fmt: skip
    out = []
    for char in text:
        code = ord(char)
        if char in escapes:
            out.append(escapes[char])
        elif code <= 0x1F or 0x7F <= code <= 0x9F:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)


def _parse_object(data: bytes | str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise FormatError(f"{what}: not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise FormatError(f"{what}: expected a JSON object, got {type(value).__name__}")
    return value


# -- /brokers/ids/<id> (ZkUtils.registerBrokerInZk) -----------------------------------------


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    host: str
    port: int
    jmx_port: int = NO_JMX_PORT
    timestamp: str = ""

    def encode(self) -> bytes:
        doc = scala_map(
            [("version", REGISTRATION_VERSION), ("host", self.host), ("port", self.port),
             ("jmx_port", self.jmx_port), ("timestamp", self.timestamp)]
        )  # fmt: skip
        return encode(doc).encode("utf-8")

    def same_broker(self, other: BrokerRegistration) -> bool:
        """0.8's conflict check (`Broker.equals`): id, host and port, not the timestamp."""
        return (self.broker_id, self.host, self.port) == (other.broker_id, other.host, other.port)

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_broker(broker_id: int, data: bytes) -> BrokerRegistration:
    """`Broker.createBroker`: host and port are what count."""
    doc = _parse_object(data, f"broker {broker_id}")
    host, port = doc.get("host"), doc.get("port")
    if not isinstance(host, str) or not isinstance(port, int) or isinstance(port, bool):
        raise FormatError(f"broker {broker_id}: needs a string host and an integer port")
    jmx = doc.get("jmx_port", NO_JMX_PORT)
    return BrokerRegistration(
        broker_id,
        host,
        port,
        jmx if isinstance(jmx, int) else NO_JMX_PORT,
        str(doc.get("timestamp", "")),
    )


# -- /brokers/topics/<topic> (AdminUtils.writeTopicPartitionAssignment) ---------------------


def encode_topic(replicas: Mapping[int, Sequence[int]], *, grown: bool = False) -> bytes:
    """`{"version":1,"partitions":{"<p>":[replica ids]}}`.

    A new topic (`AdminUtils.createTopic`) goes through an immutable map, so more than four
    partitions are in hash-trie order of their string ids, fewer in the order of the
    `mutable.HashMap` built by `assignReplicasToBrokers`. After growth (`addPartitions`) the
    map is a `mutable.HashMap[String, _]` filled with the existing then the new partitions
    (`grown=True`; we insert them in ascending order, where 0.8 iterates a map keyed by
    `TopicAndPartition`, so partitions sharing a hash bucket may be listed in another order).
    """
    ids = list(replicas)
    if grown:
        order = [int(p) for p in mutable_map_order([str(p) for p in sorted(ids)])]
    elif len(ids) <= 4:
        order = mutable_map_order(sorted(ids))
    else:
        order = [int(p) for p in immutable_map_order([str(p) for p in sorted(ids)])]
    partitions = ScalaMap((str(p), list(replicas[p])) for p in order)
    doc = ScalaMap([("version", REGISTRATION_VERSION), ("partitions", partitions)])
    return encode(doc).encode("utf-8")


def parse_topic(topic: str, data: bytes) -> dict[int, list[int]]:
    """partition -> replica ids; `ZkUtils.getPartitionAssignmentForTopics` (no
    `partitions` key means no partitions)."""
    doc = _parse_object(data, f"topic {topic}")
    partitions = doc.get("partitions", {})
    if not isinstance(partitions, dict):
        raise FormatError(f"topic {topic}: partitions must be an object")
    try:
        return {int(p): [int(r) for r in replicas] for p, replicas in partitions.items()}
    except (TypeError, ValueError):
        raise FormatError(f"topic {topic}: partition ids and replicas must be integers") from None


# -- /consumers/<group>/ids/<consumer id> (registerConsumerInZK, TopicCount) ----------------


@dataclass(frozen=True, slots=True)
class ConsumerRegistration:
    """A consumer's subscription: `{topic: streams}` (static) or `{regex: streams}` (wildcard)."""

    subscription: tuple[tuple[str, int], ...]
    pattern: str = STATIC
    timestamp: str = ""

    def __post_init__(self) -> None:
        if self.pattern not in PATTERNS:
            raise FormatError(f"unknown subscription pattern {self.pattern!r}")
        if self.pattern != STATIC and len(self.subscription) != 1:
            raise FormatError("a wildcard subscription has exactly one regex")
        for name, streams in self.subscription:
            if streams < 1:
                raise FormatError(f"{name}: a subscription needs at least one stream")

    @property
    def counts(self) -> dict[str, int]:
        return dict(self.subscription)

    def encode(self) -> bytes:
        """The registration 0.8 writes: `Map(version, subscription, pattern, timestamp)`."""
        if self.pattern == STATIC:
            subscription = scala_map(list(self.subscription))
        else:
            ((regex, streams),) = self.subscription
            subscription = ScalaMap([(json_escape(regex), streams)])
        doc = ScalaMap(
            [("version", REGISTRATION_VERSION), ("subscription", subscription),
             ("pattern", self.pattern), ("timestamp", self.timestamp)]
        )  # fmt: skip
        return encode(doc).encode("utf-8")


def parse_consumer(consumer_id: str, data: bytes) -> ConsumerRegistration:
    """`TopicCount.constructTopicCount`: `pattern` and `subscription` are required; a wildcard
    pattern with an empty subscription reads as static, as in 0.8."""
    doc = _parse_object(data, f"consumer {consumer_id}")
    pattern, subscription = doc.get("pattern"), doc.get("subscription")
    if not isinstance(pattern, str) or not isinstance(subscription, dict):
        raise FormatError(f"consumer {consumer_id}: needs a pattern and a subscription object")
    pairs = []
    for name, streams in subscription.items():
        if not isinstance(streams, int) or isinstance(streams, bool):
            raise FormatError(f"consumer {consumer_id}: stream count of {name!r} is not an int")
        pairs.append((name, streams))
    if pattern not in (WHITE_LIST, BLACK_LIST) or not pairs:
        pattern = STATIC
    elif len(pairs) > 1:
        pairs = pairs[:1]  # 0.8 takes the head of the map
    return ConsumerRegistration(tuple(pairs), pattern, str(doc.get("timestamp", "")))


def encode_offset(offset: int) -> bytes:
    return str(offset).encode("ascii")


def parse_offset(path: str, data: bytes) -> int:
    try:
        return int(data.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise FormatError(f"{path}: offset {data[:40]!r} is not an integer") from None
