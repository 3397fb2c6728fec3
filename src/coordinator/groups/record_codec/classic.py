"""Classic group rows: one metadata snapshot per group, keyed by group id."""

from __future__ import annotations

import base64
import binascii
import json
from json.encoder import encode_basestring_ascii

from coordinator.groups.record_codec.base import VALUE_VERSION, b64, versioned
from coordinator.groups.store.base import UNPLACED, StoredRecord
from rebalance.classic.records import GroupMetadataRecord, GroupMetadataValue, MemberMetadataValue

KIND = "group"
RECORD_CLASS = GroupMetadataRecord


def encode(record: GroupMetadataRecord, partition: int = UNPLACED) -> StoredRecord:
    group = record.value
    if group is None:
        return StoredRecord(KIND, record.group_id, None, partition)
    fast_value = _group_value(group)
    if fast_value is not None:
        return StoredRecord(KIND, record.group_id, fast_value, partition)
    return json_group_row(record, partition)


def json_group_row(record: GroupMetadataRecord, partition: int = UNPLACED) -> StoredRecord:
    """A group's row written by `json.dumps`: the format's definition, which `_group_value`
    reproduces byte for byte (and falls back to for values it does not handle)."""
    group = record.value
    if group is None:
        return StoredRecord(KIND, record.group_id, None, partition)
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
                "subscription": b64(m.subscription),
                "assignment": b64(m.assignment),
            }
            for m in group.members
        ],
    }
    return StoredRecord(KIND, record.group_id, json.dumps(value).encode(), partition)


def _group_value(group: GroupMetadataValue) -> bytes | None:
    """The value `encode` writes for a group's metadata, built without `json.dumps`, as
    `_offset_row` builds an offset's: a rebalance of a 1000-member group writes one row with a
    thousand members, and the dicts `json.dumps` needs, with `base64`'s wrapper per field, were
    a visible part of the round (RESULTS.md: figures behind the code). The same bytes, from the
    same C string escaper
    (`ensure_ascii`, json's default), `int.__repr__` and `binascii`'s base64; None when a field
    has a type `json` might write differently (then `json_group_row` is used)."""
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


def decode(row: StoredRecord) -> GroupMetadataRecord:
    if row.value is None:
        return GroupMetadataRecord(row.key, None)
    v = versioned(row)
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
