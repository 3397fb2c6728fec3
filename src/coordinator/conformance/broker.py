"""The broker under test: what it advertises, what it is configured with, and member connections.

Every request is built from kio's types at a version both sides speak: the highest the broker
advertises, capped at the version whose semantics the scenarios are written for (`PREFERRED`).
A member is one connection to the group's coordinator (found with FindCoordinator), as a real
consumer has: its JoinGroup may park, and the connection answers in order.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from coordinator.wire.api_keys import ApiKey
from coordinator.wire.client import WireClient
from coordinator.wire.codec import kio_versions
from rebalance.topics import TopicInfo

BROKER_RESOURCE = 4

#: The newest version of each API whose behaviour the scenarios are written against.
PREFERRED: Mapping[int, int] = {
    ApiKey.FIND_COORDINATOR: 3,
    ApiKey.JOIN_GROUP: 7,
    ApiKey.HEARTBEAT: 4,
    ApiKey.LEAVE_GROUP: 4,
    ApiKey.SYNC_GROUP: 5,
    ApiKey.DESCRIBE_GROUPS: 5,
    ApiKey.LIST_GROUPS: 4,
    ApiKey.OFFSET_COMMIT: 8,
    ApiKey.OFFSET_FETCH: 7,
    ApiKey.DELETE_GROUPS: 2,
    ApiKey.DESCRIBE_CONFIGS: 4,
    ApiKey.CREATE_TOPICS: 4,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: 1,
    ApiKey.CONSUMER_GROUP_DESCRIBE: 1,
}

#: The settings scenarios may assume, and Kafka's defaults for them.
KAFKA_DEFAULTS: Mapping[str, str] = {
    "group.initial.rebalance.delay.ms": "3000",
    "group.min.session.timeout.ms": "6000",
    "group.max.session.timeout.ms": "1800000",
    "group.max.size": "2147483647",
    "offsets.topic.num.partitions": "50",
    "offsets.retention.check.interval.ms": "600000",
    "group.consumer.session.timeout.ms": "45000",
    "group.consumer.min.session.timeout.ms": "45000",
    "group.consumer.max.session.timeout.ms": "60000",
    "group.consumer.heartbeat.interval.ms": "5000",
    "group.consumer.min.heartbeat.interval.ms": "5000",
    "group.consumer.max.heartbeat.interval.ms": "15000",
    "group.consumer.max.size": "2147483647",
    # Kafka 4.3's batching of target assignments, 1 s by default in 4.4 (absent before: one
    # target per epoch bump, as 0).
    "group.consumer.assignment.interval.ms": "1000",
}


#: How long a created topic may take to show in Metadata.
TOPIC_VISIBLE_S = 10.0


class BrokerError(RuntimeError):
    """The broker cannot be tested: unreachable, or it lacks an API every scenario needs."""


@dataclass
class BrokerUnderTest:
    host: str
    port: int
    versions: dict[int, int] = field(default_factory=dict)
    #: The highest version of each API both sides know, before the `PREFERRED` cap.
    advertised: dict[int, int] = field(default_factory=dict)
    #: The lowest version of each API both sides know.
    oldest: dict[int, int] = field(default_factory=dict)
    #: Settings as the broker reported them (DescribeConfigs) or as `--assume` gave them.
    settings: dict[str, str] = field(default_factory=dict)
    #: Where each setting came from: "broker" or "assumed".
    sources: dict[str, str] = field(default_factory=dict)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    #: Topics this run created (`ensure_topic`), and the groups it used: `cleanup` removes them.
    created_topics: list[str] = field(default_factory=list)
    used_groups: set[str] = field(default_factory=set)
    #: Member ids the differential runs were given (pending ones among them), for `cleanup`.
    member_ids: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    async def connect(cls, bootstrap: str, assume: Mapping[str, str]) -> BrokerUnderTest:
        host, _, port = bootstrap.rpartition(":")
        if not host or not port.isdigit():
            raise BrokerError(f"--bootstrap must be HOST:PORT, not {bootstrap!r}")
        broker = cls(host, int(port))
        try:
            client = await WireClient.connect(broker.host, broker.port)
        except OSError as exc:
            raise BrokerError(f"cannot connect to {bootstrap}: {exc.strerror or exc}") from None
        try:
            advertised = await client.request(ApiKey.API_VERSIONS, 0, {})
            for key in advertised.api_keys:
                ours = kio_versions(int(key.api_key))
                highest = min(int(key.max_version), ours.stop - 1)
                lowest = max(int(key.min_version), ours.start)
                if highest >= lowest:
                    broker.advertised[int(key.api_key)] = highest
                    broker.oldest[int(key.api_key)] = lowest
                top = min(highest, PREFERRED.get(int(key.api_key), 99))
                if top >= max(int(key.min_version), ours.start):
                    broker.versions[int(key.api_key)] = top
            missing = [
                k
                for k in (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT)
                if k not in broker.versions
            ]
            if missing:
                raise BrokerError(
                    f"the broker does not answer the group APIs {[int(k) for k in missing]}"
                )
            await broker._read_settings(client, assume)
        finally:
            await client.close()
        return broker

    async def _read_settings(self, client: WireClient, assume: Mapping[str, str]) -> None:
        if ApiKey.DESCRIBE_CONFIGS in self.versions:
            metadata = await client.request(ApiKey.METADATA, 1, {"topics": []})
            node = str(metadata.brokers[0].node_id) if metadata.brokers else "0"
            response = await client.request(
                ApiKey.DESCRIBE_CONFIGS,
                self.versions[ApiKey.DESCRIBE_CONFIGS],
                {"resources": [{"resource_type": BROKER_RESOURCE, "resource_name": node,
                                "configuration_keys": list(KAFKA_DEFAULTS)}],
                 "include_synonyms": False, "include_documentation": False},
            )  # fmt: skip
            for result in response.results:
                for config in result.configs:
                    if config.value is not None:
                        self.settings[config.name] = config.value
                        self.sources[config.name] = "broker"
        for key, value in assume.items():
            self.settings[key] = value
            self.sources[key] = "assumed"

    def setting_ms(self, key: str) -> int | None:
        value = self.settings.get(key)
        return int(value) if value is not None else None

    def group_id(self, scenario: str) -> str:
        """A group of the scenario's own, new on every run."""
        return f"conformance-{self.run_id}-{scenario}"

    async def ensure_topic(self, name: str, partitions: int = 1) -> bool:
        """Create `name` with CreateTopics (an existing one is fine); False if the broker
        cannot create topics for us."""
        version = self.versions.get(ApiKey.CREATE_TOPICS)
        if version is None:
            return False
        client = await WireClient.connect(self.host, self.port)
        try:
            response = await client.request(
                ApiKey.CREATE_TOPICS,
                version,
                {"topics": [{"name": name, "num_partitions": partitions,
                             "replication_factor": -1, "assignments": [], "configs": []}],
                 "timeout": 30_000, "validate_only": False},
            )  # fmt: skip
            outcome = response.topics[0].error_code.name
            if outcome == "none":
                self.created_topics.append(name)
            if outcome not in ("none", "topic_already_exists"):
                return False
            # CreateTopics answers once the topic is decided (Kafka: committed by the
            # controller); brokers learn it after. A group joined before its coordinator knows
            # the topic is assigned nothing until the next metadata change.
            return await self._visible(client, name, partitions)
        finally:
            await client.close()

    async def _visible(self, client: WireClient, name: str, partitions: int) -> bool:
        """Wait until Metadata shows `name` with `partitions` led partitions."""
        version = min(self.advertised.get(ApiKey.METADATA, 1), 12)
        values: dict[str, Any] = {
            "topics": [{"name": name, "topic_id": None}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
            "include_cluster_authorized_operations": False,
        }
        deadline = asyncio.get_running_loop().time() + TOPIC_VISIBLE_S
        while True:
            (topic,) = (await client.request(ApiKey.METADATA, version, values)).topics
            led = [p for p in topic.partitions if int(p.leader_id) >= 0]
            if topic.error_code.name == "none" and len(led) >= partitions:
                return True
            if asyncio.get_running_loop().time() > deadline:
                return False
            await asyncio.sleep(0.02)

    async def topic_info(self, name: str) -> TopicInfo:
        """The topic's id and partition count (Metadata v10+, where topics have ids)."""
        client = await WireClient.connect(self.host, self.port)
        try:
            version = min(self.advertised.get(ApiKey.METADATA, 0), 12)
            if version < 10:
                raise BrokerError(f"Metadata v{version} has no topic ids (v10+ needed)")
            response = await client.request(
                ApiKey.METADATA,
                version,
                {"topics": [{"name": name, "topic_id": None}], "allow_auto_topic_creation": False,
                 "include_topic_authorized_operations": False},
            )  # fmt: skip
        finally:
            await client.close()
        (topic,) = response.topics
        return TopicInfo(name, str(topic.topic_id), len(topic.partitions))

    async def member(self, group_id: str) -> Member:
        """A connection to `group_id`'s coordinator."""
        self.used_groups.add(group_id)
        client = await WireClient.connect(self.host, self.port)
        version = self.versions.get(ApiKey.FIND_COORDINATOR)
        if version is None:
            return Member(client, self, group_id)
        values: dict[str, Any] = {"key_type": 0}
        values |= {"coordinator_keys": [group_id]} if version >= 4 else {"key": group_id}
        found = await client.request(ApiKey.FIND_COORDINATOR, version, values)
        if version >= 4:
            (found,) = found.coordinators
        if (found.host, found.port) != (self.host, self.port):
            await client.close()
            client = await WireClient.connect(found.host, found.port)
        return Member(client, self, group_id)


@dataclass
class Member:
    """One consumer's connection and the identity the coordinator gave it."""

    client: WireClient
    broker: BrokerUnderTest
    group_id: str
    member_id: str = ""
    generation: int = -1
    instance_id: str | None = None

    def version(self, api_key: int) -> int:
        return self.broker.versions[api_key]

    async def join(
        self,
        *,
        session_ms: int,
        rebalance_ms: int | None = None,
        protocol_type: str = "consumer",
        protocols: Sequence[tuple[str, bytes]] = (("range", b"\x00\x00\x00\x00\x00\x00"),),
        member_id: str | None = None,
        version: int | None = None,
    ) -> Any:
        response = await self.client.request(
            ApiKey.JOIN_GROUP,
            self.version(ApiKey.JOIN_GROUP) if version is None else version,
            {
                "group_id": self.group_id,
                "session_timeout": session_ms,
                "rebalance_timeout": rebalance_ms if rebalance_ms is not None else session_ms,
                "member_id": self.member_id if member_id is None else member_id,
                "group_instance_id": self.instance_id,
                "protocol_type": protocol_type,
                "protocols": [{"name": n, "metadata": m} for n, m in protocols],
                "reason": None,
            },
        )
        if response.member_id:
            self.member_id = response.member_id
        if response.generation_id >= 0:
            self.generation = response.generation_id
        return response

    async def join_fully(self, *, session_ms: int, rebalance_ms: int | None = None) -> Any:
        """Join, answering MEMBER_ID_REQUIRED (v4+) by joining again with the id given."""
        response = await self.join(session_ms=session_ms, rebalance_ms=rebalance_ms)
        if response.error_code.name == "member_id_required":
            response = await self.join(session_ms=session_ms, rebalance_ms=rebalance_ms)
        return response

    async def sync(self, assignments: Mapping[str, bytes] | None = None) -> Any:
        return await self.client.request(
            ApiKey.SYNC_GROUP,
            self.version(ApiKey.SYNC_GROUP),
            {
                "group_id": self.group_id,
                "generation_id": self.generation,
                "member_id": self.member_id,
                "group_instance_id": self.instance_id,
                "protocol_type": "consumer",
                "protocol_name": "range",
                "assignments": [
                    {"member_id": m, "assignment": a} for m, a in (assignments or {}).items()
                ],
            },
        )

    async def heartbeat(self, generation: int | None = None, member_id: str | None = None) -> Any:
        response = await self.client.request(
            ApiKey.HEARTBEAT,
            self.version(ApiKey.HEARTBEAT),
            {
                "group_id": self.group_id,
                "generation_id": self.generation if generation is None else generation,
                "member_id": self.member_id if member_id is None else member_id,
                "group_instance_id": self.instance_id,
            },
        )
        return response.error_code

    async def leave(self) -> Any:
        version = self.version(ApiKey.LEAVE_GROUP)
        values: dict[str, Any] = {"group_id": self.group_id}
        if version >= 3:
            values["members"] = [
                {"member_id": self.member_id, "group_instance_id": self.instance_id,
                 "reason": None}
            ]  # fmt: skip
        else:
            values["member_id"] = self.member_id
        return await self.client.request(ApiKey.LEAVE_GROUP, version, values)

    async def commit(self, topic: str, partition: int, offset: int, generation: int) -> Any:
        response = await self.client.request(
            ApiKey.OFFSET_COMMIT,
            self.version(ApiKey.OFFSET_COMMIT),
            {
                "group_id": self.group_id,
                "generation_id_or_member_epoch": generation,
                "generation_id": generation,
                "member_id": self.member_id,
                "group_instance_id": self.instance_id,
                "retention_time": -1,
                "topics": [
                    {"name": topic, "partitions": [
                        {"partition_index": partition, "committed_offset": offset,
                         "committed_leader_epoch": -1, "committed_metadata": "",
                         "commit_timestamp": -1}
                    ]}
                ],
            },
        )  # fmt: skip
        return response.topics[0].partitions[0].error_code

    async def fetch(self, topic: str, partition: int) -> int:
        """The group's committed offset for one partition (-1: none)."""
        response = await self.client.request(
            ApiKey.OFFSET_FETCH,
            self.version(ApiKey.OFFSET_FETCH),
            {"group_id": self.group_id,
             "topics": [{"name": topic, "partition_indexes": [partition]}],
             "require_stable": False},
        )  # fmt: skip
        return int(response.topics[0].partitions[0].committed_offset)

    async def describe(self) -> Any:
        response = await self.client.request(
            ApiKey.DESCRIBE_GROUPS,
            self.version(ApiKey.DESCRIBE_GROUPS),
            {"groups": [self.group_id], "include_authorized_operations": False},
        )
        return response.groups[0]

    async def list_groups(self) -> Any:
        version = self.version(ApiKey.LIST_GROUPS)
        values: dict[str, Any] = {"states_filter": [], "types_filter": []}
        response = await self.client.request(ApiKey.LIST_GROUPS, version, values)
        return response.groups

    async def delete(self) -> Any:
        response = await self.client.request(
            ApiKey.DELETE_GROUPS,
            self.version(ApiKey.DELETE_GROUPS),
            {"groups_names": [self.group_id]},
        )
        return response.results[0].error_code

    async def close(self) -> None:
        await self.client.close()
