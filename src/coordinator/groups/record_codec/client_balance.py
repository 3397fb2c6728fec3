"""Client-balance (TubeMQ) rows, keyed by (group, record kind, member id / partition key / "")."""

from __future__ import annotations

import json
from typing import Any

from coordinator.groups.record_codec.base import VALUE_VERSION, versioned
from coordinator.groups.store.base import UNPLACED, StoredRecord
from rebalance.client_balance import records as cb

KIND = "client-balance"
RECORD_CLASS = cb.ClientBalanceRecord


def encode(record: cb.ClientBalanceRecord, partition: int = UNPLACED) -> StoredRecord:
    kind, name = record.key()
    key = json.dumps([record.group_id, str(kind), name], ensure_ascii=False)
    value = record.value
    if value is None or isinstance(value, cb.Tombstone):
        return StoredRecord(KIND, key, None, partition)
    body: dict[str, Any] = {"v": VALUE_VERSION}
    if isinstance(value, cb.GroupEpochValue):
        body |= {"epoch": value.epoch}
        if value.source_count is not None:
            body |= {"source_count": value.source_count, "topics": list(value.topics)}
    elif isinstance(value, cb.NodeValue):
        body |= {
            "epoch": value.member_epoch,
            "source_count": value.source_count,
            "node_id": value.node_id,
            "topics": list(value.topics),
            "client_id": value.client_id,
            "client_host": value.client_host,
            "session_timeout": value.session_timeout_ms,
        }
    else:
        body |= {"member": value.member_id, "epoch": value.member_epoch}
    return StoredRecord(KIND, key, json.dumps(body).encode(), partition)


def decode(row: StoredRecord) -> cb.ClientBalanceRecord:
    group_id, kind_name, name = json.loads(row.key)
    kind = cb.RecordKind(kind_name)
    if row.value is None:
        if kind is cb.RecordKind.GROUP_EPOCH:
            return cb.ClientBalanceRecord(group_id, None)
        return cb.ClientBalanceRecord(group_id, cb.Tombstone(kind, name))
    v = versioned(row)
    if kind is cb.RecordKind.GROUP_EPOCH:
        return cb.ClientBalanceRecord(
            group_id,
            cb.GroupEpochValue(v["epoch"], v.get("source_count"), tuple(v.get("topics", ()))),
        )
    if kind is cb.RecordKind.NODE:
        return cb.ClientBalanceRecord(
            group_id,
            cb.NodeValue(
                name,
                v["epoch"],
                v["source_count"],
                v["node_id"],
                tuple(v["topics"]),
                v["client_id"],
                v["client_host"],
                v["session_timeout"],
            ),
        )
    topic, partition = cb.parse_holder_key(name)
    return cb.ClientBalanceRecord(
        group_id, cb.HolderValue(topic, partition, v["member"], v["epoch"])
    )
