"""kill -9 loses nothing acknowledged, for every kind of state the server keeps: KIP-848
consumer groups (member epochs, commits with them), client-balance groups (registrations,
commits) and topic admin (created, grown, written, trimmed by DeleteRecords, deleted). One
trial of each here (`crash_trials`); benchmarks/bench_crash_trials.py runs a hundred of each."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from crash_trials import KINDS, trial


@pytest.mark.parametrize("kind", KINDS)
async def test_kill_9_loses_nothing_acknowledged(tmp_path: Path, kind: str) -> None:
    checked = await trial(KINDS[kind], tmp_path, random.Random(kind))
    assert checked >= 10  # the check saw what the clients were told
