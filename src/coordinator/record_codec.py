"""Core records <-> stored rows.

The store keeps rows `(kind, key, value)` with last-write-wins per `(kind, key)` and deletes on a
tombstone (value None). Group metadata rows are keyed by group id; offset rows by
(group, topic, partition). Values are versioned JSON: easy to inspect with `sqlite3`, and a row
written by a newer release fails with a clear error instead of being misread.
"""

from __future__ import annotations

import base64
import binascii
import json
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any

from coordinator.store.base import StoredRecord
from rebalance.client_balance import records as cb
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
from rebalance.records import (
    GroupMetadataRecord,
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetAndMetadata,
    OffsetCommitRecord,
    Record,
)

GROUP_KIND = "group"
OFFSET_KIND = "offset"
#: KIP-848 consumer-group rows, keyed by (group, record kind, member id or "").
CONSUMER_KIND = "consumer"
#: Client-balance (TubeMQ) rows, keyed by (group, record kind, member id / partition key / "").
CLIENT_BALANCE_KIND = "client-balance"
VALUE_VERSION = 1


class RecordFormatError(ValueError):
    """A stored row that this release cannot read (corrupt, or written by a newer one)."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def encode(record: Record) -> StoredRecord:
    if type(record) is OffsetCommitRecord:  # the common row first: one per committed offset
        fast = _offset_row(record)
        if fast is not None:
            return fast
    if isinstance(record, ConsumerGroupRecord):
        return _encode_consumer(record)
    if isinstance(record, cb.ClientBalanceRecord):
        return _encode_client_balance(record)
    if isinstance(record, OffsetCommitRecord):
        return json_offset_row(record)
    assert isinstance(record, GroupMetadataRecord)
    group = record.value
    if group is None:
        return StoredRecord(GROUP_KIND, record.group_id, None)
    fast_value = _group_value(group)
    if fast_value is not None:
        return StoredRecord(GROUP_KIND, record.group_id, fast_value)
    return json_group_row(record)


def json_offset_row(record: OffsetCommitRecord) -> StoredRecord:
    """An offset's row written by `json.dumps`: the format's definition, which `_offset_row`
    reproduces byte for byte (and falls back to for values it does not handle)."""
    key = json.dumps([record.group_id, record.topic, record.partition], ensure_ascii=False)
    offset = record.value
    if offset is None:
        return StoredRecord(OFFSET_KIND, key, None)
    value: dict[str, Any] = {
        "v": VALUE_VERSION,
        "offset": offset.offset,
        "leader_epoch": offset.leader_epoch,
        "metadata": offset.metadata,
        "commit_ts": offset.commit_timestamp_ms,
        "expire_ts": offset.expire_timestamp_ms,
    }
    return StoredRecord(OFFSET_KIND, key, json.dumps(value).encode())


def json_group_row(record: GroupMetadataRecord) -> StoredRecord:
    """A group's row written by `json.dumps`: the format's definition, which `_group_value`
    reproduces byte for byte (and falls back to for values it does not handle)."""
    group = record.value
    if group is None:
        return StoredRecord(GROUP_KIND, record.group_id, None)
    value = {
        "v": VALUE_VERSION,
        "protocol_type": group.protocol_type,
        "generation": group.generation,
        "protocol_name": group.protocol_name,
        "leader": group.leader_id,
        "state_ts": group.current_state_timestamp_ms,
        "members": [
            {
                "id": m.member_id,
                "instance": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "rebalance_timeout": m.rebalance_timeout_ms,
                "session_timeout": m.session_timeout_ms,
                "subscription": _b64(m.subscription),
                "assignment": _b64(m.assignment),
            }
            for m in group.members
        ],
    }
    return StoredRecord(GROUP_KIND, record.group_id, json.dumps(value).encode())


def _offset_row(record: OffsetCommitRecord) -> StoredRecord | None:
    """The row `encode` writes for an offset, built without `json.dumps` (a commit makes one
    row per partition; `json.dumps` of the key and value took 5 µs of the ~6): the same bytes,
    from the same C string escapers `json` uses (`ensure_ascii=False` for the key, the default
    for the value) and `int.__repr__`. None for a value of any other type than `json` would
    write the same way (then `encode` asks `json`)."""
    group_id, topic, partition, offset = (
        record.group_id,
        record.topic,
        record.partition,
        record.value,
    )
    if type(group_id) is not str or type(topic) is not str or type(partition) is not int:
        return None
    key = f"[{encode_basestring(group_id)}, {encode_basestring(topic)}, {partition!r}]"
    if offset is None:
        return StoredRecord(OFFSET_KIND, key, None)
    position, epoch, metadata = offset.offset, offset.leader_epoch, offset.metadata
    stamp, expire = offset.commit_timestamp_ms, offset.expire_timestamp_ms
    if (
        type(position) is not int
        or type(epoch) is not int
        or type(metadata) is not str
        or type(stamp) is not int
        or (expire is not None and type(expire) is not int)
    ):
        return None
    value = (
        f'{{"v": {VALUE_VERSION}, "offset": {position!r}, "leader_epoch": {epoch!r}, '
        f'"metadata": {encode_basestring_ascii(metadata)}, "commit_ts": {stamp!r}, '
        f'"expire_ts": {"null" if expire is None else repr(expire)}}}'
    )
    return StoredRecord(OFFSET_KIND, key, value.encode())


def _group_value(group: GroupMetadataValue) -> bytes | None:
    """The value `encode` writes for a group's metadata, built without `json.dumps`, as
    `_offset_row` builds an offset's: a rebalance of a 1000-member group writes one row with a
    thousand members, and the dicts `json.dumps` needs, with `base64`'s wrapper per field, took
    ~2.5 ms of it (of a ~45 ms round in process). The same bytes, from the same C string escaper
    (`ensure_ascii`, json's default), `int.__repr__` and `binascii`'s base64; None when a field
    has a type `json` might write differently (then `encode` asks `json`)."""
    protocol_type, generation = group.protocol_type, group.generation
    protocol_name, leader, stamp = (
        group.protocol_name,
        group.leader_id,
        group.current_state_timestamp_ms,
    )
    if (
        (protocol_type is not None and type(protocol_type) is not str)
        or type(generation) is not int
        or (protocol_name is not None and type(protocol_name) is not str)
        or (leader is not None and type(leader) is not str)
        or type(stamp) is not int
    ):
        return None
    members = []
    for m in group.members:
        member_id, instance, client_id, host = (
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
        )
        rebalance_timeout, session_timeout = m.rebalance_timeout_ms, m.session_timeout_ms
        subscription, assignment = m.subscription, m.assignment
        if (
            type(member_id) is not str
            or (instance is not None and type(instance) is not str)
            or type(client_id) is not str
            or type(host) is not str
            or type(rebalance_timeout) is not int
            or type(session_timeout) is not int
            or type(subscription) is not bytes
            or type(assignment) is not bytes
        ):
            return None
        members.append(
            f'{{"id": {_escape(member_id)}, '
            f'"instance": {"null" if instance is None else _escape(instance)}, '
            f'"client_id": {_escape(client_id)}, "client_host": {_escape(host)}, '
            f'"rebalance_timeout": {rebalance_timeout!r}, '
            f'"session_timeout": {session_timeout!r}, '
            f'"subscription": "{_base64(subscription, newline=False).decode("ascii")}", '
            f'"assignment": "{_base64(assignment, newline=False).decode("ascii")}"}}'
        )
    value = (
        f'{{"v": {VALUE_VERSION}, '
        f'"protocol_type": {"null" if protocol_type is None else _escape(protocol_type)}, '
        f'"generation": {generation!r}, '
        f'"protocol_name": {"null" if protocol_name is None else _escape(protocol_name)}, '
        f'"leader": {"null" if leader is None else _escape(leader)}, '
        f'"state_ts": {stamp!r}, "members": [{", ".join(members)}]}}'
    )
    return value.encode()


_escape = encode_basestring_ascii
_base64 = binascii.b2a_base64


def decode(row: StoredRecord) -> Record:
    try:
        if row.kind == CONSUMER_KIND:
            return _decode_consumer(row)
        if row.kind == CLIENT_BALANCE_KIND:
            return _decode_client_balance(row)
        if row.kind == OFFSET_KIND:
            group_id, topic, partition = json.loads(row.key)
            if row.value is None:
                return OffsetCommitRecord(group_id, topic, partition, None)
            v = _versioned(row)
            return OffsetCommitRecord(
                group_id,
                topic,
                partition,
                OffsetAndMetadata(
                    v["offset"], v["leader_epoch"], v["metadata"], v["commit_ts"], v["expire_ts"]
                ),
            )
        if row.kind == GROUP_KIND:
            if row.value is None:
                return GroupMetadataRecord(row.key, None)
            v = _versioned(row)
            members = tuple(
                MemberMetadataValue(
                    m["id"],
                    m["instance"],
                    m["client_id"],
                    m["client_host"],
                    m["rebalance_timeout"],
                    m["session_timeout"],
                    base64.b64decode(m["subscription"]),
                    base64.b64decode(m["assignment"]),
                )
                for m in v["members"]
            )
            return GroupMetadataRecord(
                row.key,
                GroupMetadataValue(
                    v["protocol_type"],
                    v["generation"],
                    v["protocol_name"],
                    v["leader"],
                    v["state_ts"],
                    members,
                ),
            )
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordFormatError(f"unreadable {row.kind} row {row.key!r}: {exc}") from exc
    raise RecordFormatError(f"unknown row kind {row.kind!r} (key {row.key!r})")


def _versioned(row: StoredRecord) -> dict[str, Any]:
    assert row.value is not None
    value = json.loads(row.value)
    if not isinstance(value, dict):
        raise RecordFormatError(f"{row.kind} row {row.key!r} is not an object")
    version = value.get("v")
    if version != VALUE_VERSION:
        raise RecordFormatError(
            f"{row.kind} row {row.key!r} has value version {version!r}; this release reads "
            f"version {VALUE_VERSION} (written by a newer release?)"
        )
    return value


# -- consumer groups ------------------------------------------------------------------------
def _assignment(value: Assignment) -> list[Any]:
    return [[topic_id, list(partitions)] for topic_id, partitions in value]


def _read_assignment(value: list[Any]) -> Assignment:
    return tuple((str(topic_id), tuple(int(p) for p in ps)) for topic_id, ps in value)


def _encode_consumer(record: ConsumerGroupRecord) -> StoredRecord:
    kind, member_id = record.key()
    key = json.dumps([record.group_id, str(kind), member_id], ensure_ascii=False)
    value = record.value
    if value is None or isinstance(value, Tombstone):
        return StoredRecord(CONSUMER_KIND, key, None)
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
                "protocols": [[name, _b64(data)] for name, data in value.classic.protocols],
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
    return StoredRecord(CONSUMER_KIND, key, json.dumps(body).encode())


def _read_classic(value: dict[str, Any] | None) -> ClassicMetadata | None:
    """A classic-protocol member's metadata (absent: a KIP-848 member)."""
    if value is None:
        return None
    return ClassicMetadata(
        int(value["session_timeout"]),
        tuple((str(name), base64.b64decode(data)) for name, data in value["protocols"]),
    )


def _decode_consumer(row: StoredRecord) -> ConsumerGroupRecord:
    group_id, kind_name, member_id = json.loads(row.key)
    kind = RecordKind(kind_name)
    if row.value is None:
        if kind is RecordKind.GROUP_EPOCH:
            return ConsumerGroupRecord(group_id, None)
        return ConsumerGroupRecord(group_id, Tombstone(kind, member_id))
    v = _versioned(row)
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
        ),
    )


# -- client-balance groups ----------------------------------------------------------------
def _encode_client_balance(record: cb.ClientBalanceRecord) -> StoredRecord:
    kind, name = record.key()
    key = json.dumps([record.group_id, str(kind), name], ensure_ascii=False)
    value = record.value
    if value is None or isinstance(value, cb.Tombstone):
        return StoredRecord(CLIENT_BALANCE_KIND, key, None)
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
    return StoredRecord(CLIENT_BALANCE_KIND, key, json.dumps(body).encode())


def _decode_client_balance(row: StoredRecord) -> cb.ClientBalanceRecord:
    group_id, kind_name, name = json.loads(row.key)
    kind = cb.RecordKind(kind_name)
    if row.value is None:
        if kind is cb.RecordKind.GROUP_EPOCH:
            return cb.ClientBalanceRecord(group_id, None)
        return cb.ClientBalanceRecord(group_id, cb.Tombstone(kind, name))
    v = _versioned(row)
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
