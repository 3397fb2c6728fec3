"""KIP-848 consumer-group rows, keyed by (group, record kind, member id or "")."""

from __future__ import annotations

import base64
import json
from typing import Any

from coordinator.groups.record_codec.base import VALUE_VERSION, b64, versioned
from coordinator.groups.store.base import UNPLACED, StoredRecord
from rebalance.consumer_group.records import (
    Assignment,
    ClassicMetadata,
    ConsumerGroupRecord,
    CurrentAssignmentValue,
    GroupEpochValue,
    MemberValue,
    RecordKind,
    TargetEpochValue,
    TargetMemberValue,
    Tombstone,
)

KIND = "consumer"
RECORD_CLASS = ConsumerGroupRecord


def _assignment(value: Assignment) -> list[Any]:
    return [[topic_id, list(partitions)] for topic_id, partitions in value]


def _read_assignment(value: list[Any]) -> Assignment:
    return tuple((str(topic_id), tuple(int(p) for p in ps)) for topic_id, ps in value)


def encode(record: ConsumerGroupRecord, partition: int = UNPLACED) -> StoredRecord:
    kind, member_id = record.key()
    key = json.dumps([record.group_id, str(kind), member_id], ensure_ascii=False)
    value = record.value
    if value is None or isinstance(value, Tombstone):
        return StoredRecord(KIND, key, None, partition)
    body: dict[str, Any] = {"v": VALUE_VERSION}
    if isinstance(value, GroupEpochValue):
        body |= {"epoch": value.epoch, "topics": [list(t) for t in value.topics]}
    elif isinstance(value, MemberValue):
        body |= {
            "instance": value.instance_id,
            "rack": value.rack_id,
            "client_id": value.client_id,
            "client_host": value.client_host,
            "rebalance_timeout": value.rebalance_timeout_ms,
            "topics": list(value.subscribed_topic_names),
            "regex": value.subscribed_topic_regex,
            "assignor": value.server_assignor,
        }
        if value.classic is not None:
            body["classic"] = {
                "session_timeout": value.classic.session_timeout_ms,
                "protocols": [[name, b64(data)] for name, data in value.classic.protocols],
            }
    elif isinstance(value, TargetMemberValue):
        body |= {"partitions": _assignment(value.partitions)}
    elif isinstance(value, TargetEpochValue):
        body |= {"epoch": value.epoch}
    else:
        body |= {
            "epoch": value.member_epoch,
            "previous_epoch": value.previous_member_epoch,
            "state": value.state,
            "assigned": _assignment(value.assigned),
            "revoking": _assignment(value.pending_revocation),
        }
        if value.epochs:  # absent: every partition at the default epoch (rows written before)
            body["epochs"] = [[epoch, _assignment(ps)] for epoch, ps in value.epochs]
    return StoredRecord(KIND, key, json.dumps(body).encode(), partition)


def _read_classic(value: dict[str, Any] | None) -> ClassicMetadata | None:
    """A classic-protocol member's metadata (absent: a KIP-848 member)."""
    if value is None:
        return None
    return ClassicMetadata(
        int(value["session_timeout"]),
        tuple((str(name), base64.b64decode(data)) for name, data in value["protocols"]),
    )


def decode(row: StoredRecord) -> ConsumerGroupRecord:
    group_id, kind_name, member_id = json.loads(row.key)
    kind = RecordKind(kind_name)
    if row.value is None:
        if kind is RecordKind.GROUP_EPOCH:
            return ConsumerGroupRecord(group_id, None)
        return ConsumerGroupRecord(group_id, Tombstone(kind, member_id))
    v = versioned(row)
    if kind is RecordKind.GROUP_EPOCH:
        topics = tuple((str(n), str(i), int(p)) for n, i, p in v["topics"])
        return ConsumerGroupRecord(group_id, GroupEpochValue(v["epoch"], topics))
    if kind is RecordKind.MEMBER:
        return ConsumerGroupRecord(
            group_id,
            MemberValue(
                member_id,
                v["instance"],
                v["rack"],
                v["client_id"],
                v["client_host"],
                v["rebalance_timeout"],
                tuple(v["topics"]),
                v["regex"],
                v["assignor"],
                _read_classic(v.get("classic")),
            ),
        )
    if kind is RecordKind.TARGET_MEMBER:
        return ConsumerGroupRecord(
            group_id, TargetMemberValue(member_id, _read_assignment(v["partitions"]))
        )
    if kind is RecordKind.TARGET_EPOCH:
        return ConsumerGroupRecord(group_id, TargetEpochValue(v["epoch"]))
    return ConsumerGroupRecord(
        group_id,
        CurrentAssignmentValue(
            member_id,
            v["epoch"],
            v["previous_epoch"],
            v["state"],
            _read_assignment(v["assigned"]),
            _read_assignment(v["revoking"]),
            tuple((int(e), _read_assignment(ps)) for e, ps in v.get("epochs", ())),
        ),
    )
