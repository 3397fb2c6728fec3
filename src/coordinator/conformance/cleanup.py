"""What a conformance run leaves behind, removed: its groups and the topics it created.

A run uses groups of its own (`BrokerUnderTest.used_groups`: scenarios', the differential
runs' and their probes') and creates a topic or two (`created_topics`). At the end each group
is emptied as an admin empties it, since members a scenario left behind stay until their
sessions expire: classic members leave by LeaveGroup v3+ naming them (what the admin client's
`removeMembersFromConsumerGroup` sends), KIP-848 members by a ConsumerGroupHeartbeat with epoch
-1 under their ids (ConsumerGroupDescribe names them); then DeleteGroups, then DeleteTopics.
Whatever a broker refuses is reported, not fatal: the run's results stand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coordinator.conformance.broker import BrokerUnderTest
from coordinator.conformance.scenario import error_name
from coordinator.wire.api_keys import ApiKey
from coordinator.wire.client import WireClient

#: Group deletions that are done: deleted now, or never created (a scenario that was skipped).
GONE = ("none", "group_id_not_found")


@dataclass
class Cleanup:
    groups: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    #: What could not be removed, one line each (name: the broker's error).
    left: list[str] = field(default_factory=list)

    def summary(self) -> str:
        text = f"removed {len(self.groups)} groups and {len(self.topics)} topics of this run"
        return text + (f"; left: {', '.join(self.left)}" if self.left else "")


async def clean_up(broker: BrokerUnderTest) -> Cleanup:
    done = Cleanup()
    for group_id in sorted(broker.used_groups):
        member = await broker.member(group_id)
        try:
            await _empty(broker, member.client, group_id)
            error = error_name(await member.delete())
        finally:
            await member.close()
        if error == "none":
            done.groups.append(group_id)
        elif error not in GONE:
            done.left.append(f"group {group_id}: {error}")
    if broker.created_topics:
        await _delete_topics(broker, done)
    return done


async def _empty(broker: BrokerUnderTest, client: Any, group_id: str) -> None:
    """Remove every member the group still has."""
    if (
        ApiKey.DESCRIBE_GROUPS in broker.versions
        and broker.versions.get(ApiKey.LEAVE_GROUP, 0) >= 3
    ):
        described = await client.request(
            ApiKey.DESCRIBE_GROUPS,
            broker.versions[ApiKey.DESCRIBE_GROUPS],
            {"groups": [group_id], "include_authorized_operations": False},
        )
        group = described.groups[0]
        listed = {m.member_id: getattr(m, "group_instance_id", None) for m in group.members}
        if group.group_state not in ("Empty", "Dead"):  # pending members are not listed
            listed |= {m: None for m in broker.member_ids.get(group_id, set()) - set(listed)}
        members = [
            {"member_id": m, "group_instance_id": instance, "reason": "conformance run finished"}
            for m, instance in listed.items()
        ]
        if members:
            await client.request(
                ApiKey.LEAVE_GROUP,
                broker.versions[ApiKey.LEAVE_GROUP],
                {"group_id": group_id, "member_id": "", "members": members},
            )
    if ApiKey.CONSUMER_GROUP_DESCRIBE not in broker.versions:
        return
    described = await client.request(
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        broker.versions[ApiKey.CONSUMER_GROUP_DESCRIBE],
        {"group_ids": [group_id], "include_authorized_operations": False},
    )
    for m in (
        described.groups[0].members if error_name(described.groups[0].error_code) == "none" else ()
    ):
        await client.request(
            ApiKey.CONSUMER_GROUP_HEARTBEAT,
            broker.versions[ApiKey.CONSUMER_GROUP_HEARTBEAT],
            {"group_id": group_id, "member_id": m.member_id, "member_epoch": -1,
             "instance_id": m.instance_id, "rack_id": None, "rebalance_timeout": -1,
             "subscribed_topic_names": None, "subscribed_topic_regex": None,
             "server_assignor": None, "topic_partitions": None},
        )  # fmt: skip


async def _delete_topics(broker: BrokerUnderTest, done: Cleanup) -> None:
    version = broker.versions.get(ApiKey.DELETE_TOPICS)
    if version is None:
        done.left += [f"topic {t}: the broker has no DeleteTopics" for t in broker.created_topics]
        return
    client = await WireClient.connect(broker.host, broker.port)
    try:
        response = await client.request(
            ApiKey.DELETE_TOPICS,
            version,
            {"topic_names": list(broker.created_topics),
             "topics": [{"name": t, "topic_id": None} for t in broker.created_topics],
             "timeout": 30_000},
        )  # fmt: skip
    finally:
        await client.close()
    for result in response.responses:
        error = error_name(result.error_code)
        if error == "none":
            done.topics.append(result.name)
        elif error != "unknown_topic_or_partition":
            done.left.append(f"topic {result.name}: {error}")
