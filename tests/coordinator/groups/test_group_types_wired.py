"""Every registered group type is wired into the node: a codec for its records in the store and
an API module for each command it routes."""

from __future__ import annotations

import pytest

from coordinator.groups import record_codec
from coordinator.groups.apis import GROUP_APIS
from rebalance.core import GroupCoordinatorCore
from rebalance.group_types import GroupType
from rebalance.records import OffsetCommitRecord
from rebalance.registry import GROUP_TYPES

CORE = GroupCoordinatorCore()
TYPES = [CORE.group_types[factory.name] for factory in GROUP_TYPES]


@pytest.mark.parametrize("group_type", TYPES, ids=lambda t: t.name)
def test_its_records_have_a_codec_and_a_tombstone_reads_back(group_type: GroupType) -> None:
    codec = next(c for c in record_codec.CODECS if c.RECORD_CLASS is group_type.record_class)
    tombstone = group_type.record_class("g", None)
    row = record_codec.encode(tombstone)
    assert row.kind == codec.KIND and row.value is None
    assert record_codec.decode(row) == tombstone


def test_every_codec_writes_a_record_class_the_core_replays() -> None:
    replayed = {*CORE.state.types_by_record, OffsetCommitRecord}
    assert {c.RECORD_CLASS for c in record_codec.CODECS} == replayed
    assert len({c.KIND for c in record_codec.CODECS}) == len(record_codec.CODECS)


@pytest.mark.parametrize("group_type", TYPES, ids=lambda t: t.name)
def test_each_command_it_routes_has_an_api_module(group_type: GroupType) -> None:
    for command in group_type.routes():
        modules = [m.__name__ for m in GROUP_APIS if vars(m).get(command.__name__) is command]
        assert modules, f"no API module of GROUP_APIS turns requests into {command.__name__}"
