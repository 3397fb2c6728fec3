"""The heap trimmer: glibc's heaps trimmed after a burst, not while memory stays level."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from coordinator.node.heap_trim import HeapTrimmer, start_heap_trimming


class Process:
    """A stand-in for the process: its resident bytes, and a trim that gives back `freed`."""

    def __init__(self) -> None:
        self.rss = 50 << 20
        self.freed = 0
        self.trimmed = 0

    def trim(self, pad: int) -> int:
        assert pad == 0
        self.trimmed += 1
        self.rss -= self.freed
        self.freed = 0
        return 1


def trimmer(process: Process) -> HeapTrimmer:
    return HeapTrimmer(threshold=1 << 20, resident=lambda: process.rss, trim=process.trim)


def test_a_burst_is_trimmed_once_and_level_memory_never() -> None:
    process = Process()
    heap = trimmer(process)
    process.rss += 512 << 10
    assert not heap.check()  # under the threshold
    process.rss += 4 << 20  # a burst: 4.5 MiB more, 3 of it freed but resident
    process.freed = 3 << 20
    assert heap.check()
    assert (heap.trims, heap.released, process.rss) == (1, 3 << 20, (51 << 20) + (512 << 10))
    for _ in range(5):  # level again: nothing to do
        assert not heap.check()
    assert process.trimmed == 1


def test_live_growth_is_tried_once_per_threshold_of_growth() -> None:
    process = Process()
    heap = trimmer(process)
    for _ in range(10):  # 10 x 300 KiB of live data, nothing freed
        process.rss += 300 << 10
        heap.check()
    assert process.trimmed == 2  # at 1.2 and 2.4 MiB, not at every check
    assert heap.released == 0


def test_memory_freed_lowers_the_baseline() -> None:
    process = Process()
    heap = trimmer(process)
    process.rss -= 8 << 20  # connections closed, memory returned by itself
    assert not heap.check()
    process.rss += 1 << 20  # back by exactly the threshold from the new low
    assert heap.check()


async def test_it_runs_on_the_loop_until_stopped() -> None:
    process = Process()
    heap = HeapTrimmer(interval=0.01, resident=lambda: process.rss, trim=process.trim)
    heap.start()
    process.rss += 2 << 20
    process.freed = 2 << 20
    await asyncio.sleep(0.1)
    heap.stop()
    assert process.trimmed == 1 and process.rss == 50 << 20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_glibc_gives_back_what_a_burst_left_resident() -> None:
    """In a process of its own: a burst of 64 MiB of 4 KiB buffers, freed but for one in 64
    (glibc cannot return the top of its heap while it is in use, so the pages stay resident);
    the trimmer hands most of them back."""
    script = """
import asyncio
from coordinator.node.heap_trim import resident_bytes, start_heap_trimming

async def main() -> None:
    heap = start_heap_trimming()
    assert heap is not None
    heap.stop()
    burst = [bytearray(4096) for _ in range(16384)]
    kept = burst[::64]
    del burst
    grown = resident_bytes()
    assert heap.check()
    print(kept is not None, (grown - resident_bytes()) >> 20, heap.released >> 20)

asyncio.run(main())
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    kept, given_back, released = result.stdout.split()
    assert kept == "True" and int(given_back) >= 32 and int(released) >= 32


async def test_start_applies_on_this_platform_only_where_glibc_is() -> None:
    heap = start_heap_trimming()
    try:
        assert (heap is not None) == (
            sys.platform.startswith("linux") and "glibc" in " ".join(_libc())
        )
    finally:
        if heap is not None:
            heap.stop()


def _libc() -> tuple[str, str]:
    import platform

    return platform.libc_ver()
