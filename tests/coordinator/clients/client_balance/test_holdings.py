"""The registered partitions: batches handed out round robin from the partitions' buffers, one
batch out per partition; a confirm moves the partition past its batch, or (not consumed) makes
the same records come again; a stale context is refused; every change wakes a waiter."""

from __future__ import annotations

import asyncio

import pytest

from coordinator.clients.client_balance.errors import ClientBalanceError
from coordinator.clients.client_balance.holdings import Holdings
from coordinator.clients.client_balance.partitions import Message, OffsetInfo, PartitionState
from rebalance.errors import ErrorCode


def holding(*keys: str, records: int = 5) -> Holdings:
    held = Holdings()
    for n, key in enumerate(keys):
        part = PartitionState(1, "t", n, 0, records, max_offset=records)
        part.buffer = [Message(i, None, f"{n}-{i}".encode(), 0) for i in range(records)]
        held.add(key, part)
    return held


async def test_batches_go_round_robin_one_out_per_partition() -> None:
    held = holding("1:t:0", "1:t:1")
    first = held.book("1:t:0", 3)
    assert [m.offset for m in first.messages] == [0, 1, 2]
    assert (first.partition_key, first.current_offset, first.max_offset) == ("1:t:0", 0, 5)
    assert held.idle() == ["1:t:1"]  # 1:t:0 has its batch out
    held.confirm(first.confirm_context, consumed=True)
    assert held.idle() == ["1:t:1", "1:t:0"]  # the partition just served went to the back


async def test_a_confirm_moves_the_partition_on_or_hands_the_same_records_again() -> None:
    held = holding("1:t:0")
    batch = held.book("1:t:0", 3)
    part = held.confirm(batch.confirm_context, consumed=False)
    assert (part.position, part.fetch_position, part.buffer) == (0, 0, [])  # fetched again
    part.buffer = [Message(i, None, None, 0) for i in range(5)]
    batch = held.book("1:t:0", 3)
    assert held.confirm(batch.confirm_context, consumed=True).position == 3
    assert held.offsets()["1:t:0"].current_offset == 3
    assert isinstance(held.offsets()["1:t:0"], OffsetInfo)


async def test_a_stale_confirm_context_is_refused() -> None:
    held = holding("1:t:0")
    batch = held.book("1:t:0", 3)
    held.confirm(batch.confirm_context, consumed=True)
    for context in (batch.confirm_context, "1:t:9:0"):
        with pytest.raises(ClientBalanceError) as stale:
            held.confirm(context, consumed=True)
        assert stale.value.code == ErrorCode.BAD_REQUEST


async def test_every_change_wakes_a_waiter_and_a_wait_ends_at_its_timeout() -> None:
    held = holding("1:t:0")
    loop = asyncio.get_running_loop()
    started = loop.time()
    await held.wait_changed(0.05)
    assert loop.time() - started >= 0.05
    waiter = asyncio.create_task(held.wait_changed(10))
    await asyncio.sleep(0)
    held.drop("1:t:0")
    await asyncio.wait_for(waiter, 1)
    assert held.parts == {} and held.idle() == []
    held.drop("1:t:0")  # already gone: nothing
