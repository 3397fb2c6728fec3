"""A step of a differential run as the request one side is sent: the core's command (the model's
input, and what `broker_side` encodes for the broker), built from that side's `View` (its member
ids, generations, epochs, leaders and member lists)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assignors.consumer_protocol import Subscription, encode_subscription
from coordinator.conformance.side_view import View
from coordinator.conformance.steps import (
    CONSUMER_GROUP,
    CONSUMER_SLOTS,
    PARTITIONS,
    REGEX_KIND,
    Beat,
    Describe,
    Fetch,
    Heartbeat,
    Join,
    Leave,
    Step,
    Sync,
    Wait,
    group_of,
    instance_of,
)
from coordinator.wire.api_keys import ApiKey
from rebalance import commands
from rebalance.classic import commands as classic_commands
from rebalance.commands import Command
from rebalance.consumer_group.commands import ConsumerGroupDescribe, ConsumerGroupHeartbeat

#: Session and rebalance timeout of every join: no session or rebalance timer fires in a run.
LONG_MS = 600_000
#: The OffsetCommit version of a KIP-848 member (its member epoch checked, STALE_MEMBER_EPOCH).
KIP848_COMMIT_VERSION = 9


class StepRequests:
    """Builds each step's command for one run: its groups, topic and request versions, the
    timeouts every join asks for and the regex `beat cN regex` subscribes with. The metadata
    of every JoinGroup is recorded in `labels` (its bytes to `slot:protocol`), for answers to
    show it by name."""

    def __init__(
        self,
        group_ids: Mapping[str, str],
        topic: str,
        versions: Mapping[int, int],
        session_ms: int,
        rebalance_ms: int,
        regex: str | None,
    ) -> None:
        self.group_ids = group_ids
        self.topic = topic
        self.versions = versions
        self.session_ms = session_ms
        self.rebalance_ms = rebalance_ms
        self.regex = regex
        self.labels: dict[bytes, str] = {}

    def command(self, step: Step, view: View) -> Command[Any]:
        v = self.versions
        if isinstance(step, Fetch):
            return commands.OffsetFetch(
                self.group_ids[step.group],
                ((self.topic, PARTITIONS),),
                version=v[ApiKey.OFFSET_FETCH],
            )
        if isinstance(step, Describe) and step.group == CONSUMER_GROUP:
            return ConsumerGroupDescribe((self.group_ids[step.group],))
        if isinstance(step, Describe):
            assert ApiKey.DESCRIBE_GROUPS in v
            return commands.DescribeGroups((self.group_ids[step.group],))
        assert not isinstance(step, Wait), "a wait is no request"
        slot = step.slot
        group_id = self.group_ids[group_of(slot)]
        instance = instance_of(slot)
        if isinstance(step, Beat):
            return self._beat(step, view, group_id, instance)
        # A KIP-848 member's commit carries its member epoch (OffsetCommit v9, KIP-848).
        kip848 = slot in CONSUMER_SLOTS
        generation = view.epoch[slot] if kip848 else view.generation[slot]
        if isinstance(step, Join):
            if step.fresh:
                view.ids[slot] = ""
            view.offered[slot] = step.protocols[0]
            return classic_commands.JoinGroup(
                group_id=group_id,
                member_id=view.ids[slot],
                protocol_type="consumer",
                protocols=tuple((p, self._metadata(slot, p)) for p in step.protocols),
                session_timeout_ms=self.session_ms,
                rebalance_timeout_ms=self.rebalance_ms,
                group_instance_id=instance,
                version=v[ApiKey.JOIN_GROUP],
            )
        if isinstance(step, Sync):
            group = group_of(slot)
            leads = view.leader.get(group) == view.name(view.ids[slot])
            assignments = tuple(
                (view.id_of(name), f"{name}@{generation}".encode())
                for name in view.members.get(group, ())
                if name in view.names.values()
            )
            return classic_commands.SyncGroup(
                group_id,
                generation,
                view.ids[slot],
                assignments if leads else (),
                group_instance_id=instance,
                protocol_type="consumer",
                # What its join answered (a consumer syncs only after one); else what it offered.
                protocol_name=view.protocol.get(group) or view.offered.get(slot, "range"),
                version=v[ApiKey.SYNC_GROUP],
            )
        if isinstance(step, Heartbeat):
            return classic_commands.Heartbeat(
                group_id,
                generation - step.stale,
                view.ids[slot],
                instance,
                version=v[ApiKey.HEARTBEAT],
            )
        if isinstance(step, Leave):
            return classic_commands.LeaveGroup(
                group_id,
                (classic_commands.LeavingMember(view.ids[slot], instance),),
                v[ApiKey.LEAVE_GROUP],
            )
        simple = step.mode == "simple"
        partition = commands.CommitPartition(step.partition, step.offset)
        return commands.OffsetCommit(
            group_id,
            (commands.CommitTopic(self.topic, (partition,)),),
            generation_id=-1 if simple else generation - (step.mode == "stale"),
            member_id="" if simple else view.ids[slot],
            group_instance_id=None if simple else instance,
            version=KIP848_COMMIT_VERSION if kip848 else v[ApiKey.OFFSET_COMMIT],
        )

    def _beat(
        self, step: Beat, view: View, group_id: str, instance: str | None
    ) -> ConsumerGroupHeartbeat:
        """A KIP-848 consumer's heartbeat: full when joining (epoch 0, its subscription),
        else its epoch and the partitions it owns (what it was last assigned)."""
        slot = step.slot
        version = self.versions[ApiKey.CONSUMER_GROUP_HEARTBEAT]
        if step.kind == REGEX_KIND:  # subscribes by the regex only (no topic names)
            return ConsumerGroupHeartbeat(
                group_id, view.ids[slot], 0, instance_id=instance,
                rebalance_timeout_ms=self.rebalance_ms, subscribed_topic_names=(),
                subscribed_topic_regex=self.regex, topic_partitions=(), version=version,
            )  # fmt: skip
        if step.kind == "join" or (step.kind == "" and view.epoch[slot] == 0):  # out: joins
            return ConsumerGroupHeartbeat(
                group_id, view.ids[slot], 0, instance_id=instance,
                rebalance_timeout_ms=self.rebalance_ms,
                subscribed_topic_names=(self.topic,), topic_partitions=(), version=version,
            )  # fmt: skip
        if step.kind == "leave":
            epoch = -2 if instance is not None else -1
            return ConsumerGroupHeartbeat(
                group_id, view.ids[slot], epoch, instance_id=instance, version=version
            )
        epoch = view.epoch[slot] - (step.kind == "stale")
        return ConsumerGroupHeartbeat(
            group_id, view.ids[slot], epoch, instance_id=instance,
            topic_partitions=view.owned.get(slot, ()), version=version,
        )  # fmt: skip

    def _metadata(self, slot: str, protocol: str) -> bytes:
        """A consumer Subscription to the run's topic whose user data names slot and protocol."""
        label = f"{slot}:{protocol}"
        data = encode_subscription(Subscription((self.topic,), user_data=label.encode()), 0)
        self.labels[data] = label
        return data
