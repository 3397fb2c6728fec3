"""Where the group runtime computes the target assignments the core offloads (a large consumer
group's): in the assignor worker process (`coordinator.groups.assignor_worker`: it keeps each big
group's inputs and is sent only what changed), or, with ``assignor_worker="thread"`` or when the
process cannot run, in one thread, which shares the interpreter lock with the loop (heartbeats
wait beside a 1M-partition assignment: `benchmarks/bench_consumer_group_stall.py`). Each
computed target goes back to the core on the loop, and its result is carried out like any other.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Literal, Protocol

from rebalance.consumer_group.target import ComputedTarget, TargetInputs, compute_target
from rebalance.core import GroupCoordinatorCore
from rebalance.effects import Result
from rebalance.records import Record

if TYPE_CHECKING:
    from coordinator.groups.assignor_worker import AssignorWorker
    from coordinator.groups.store.base import StoredRecord

log = logging.getLogger("coordinator.runtime")


class CarryOut(Protocol):
    """The runtime's `_carry_out`: a result's effects, its records encoded by `encode` (the
    worker's, for the target records it encoded) or the runtime's own encoder."""

    def __call__(self, result: Result, encode: Callable[[Record], StoredRecord] = ...) -> None: ...


class TargetOffload:
    def __init__(
        self,
        core: GroupCoordinatorCore,
        carry_out: CarryOut,
        now_ms: Callable[[], int],
        loop: Callable[[], asyncio.AbstractEventLoop],
        placement: Literal["process", "thread"],
    ) -> None:
        self._core = core
        self._carry_out = carry_out
        self._now_ms = now_ms
        self._loop = loop
        self._in: Literal["process", "thread"] = placement
        self._thread: ThreadPoolExecutor | None = None
        self.worker: AssignorWorker | None = None
        """The assignor worker process's handle, once a target was offloaded to it."""
        self._closed = False

    def prime(self) -> None:
        """Send each big group to the worker now, paced, rather than whole by its first
        computation while heartbeats wait (`AssignorWorker.prime`): after a load."""
        if self._in != "process":
            return
        for inputs in self._core.offloaded_inputs():
            assert isinstance(inputs, TargetInputs)  # the only work offloaded today
            try:
                worker = self._worker_handle()
                if worker.broken:  # the computations use the thread
                    break
                worker.prime(inputs)
            except OSError as exc:  # the first computation starts it, or falls back
                log.error("assignor worker process not started (%s)", exc)
                break

    def offload(self, result: Result) -> None:
        """Start the result's offloaded target assignments."""
        for inputs in result.offloaded:
            assert isinstance(inputs, TargetInputs)  # the only work offloaded today
            if self._in == "process":
                try:
                    worker = self._worker_handle()
                    if worker.broken:
                        raise OSError("it died at every computation")
                    worker.keep_only(lambda group_id: self._core.group(group_id) is not None)
                    worker.compute(inputs, self._worker_done)
                    continue
                except OSError as exc:
                    log.error("assignor worker process unusable (%s): using a thread", exc)
                    self._in = "thread"
            if self._thread is None:
                self._thread = ThreadPoolExecutor(1, thread_name_prefix="assignor")
            work = self._loop().run_in_executor(self._thread, compute_target, inputs)
            work.add_done_callback(functools.partial(self._target_done, inputs))

    async def close(self) -> None:
        self._closed = True
        if self._thread is not None:
            self._thread.shutdown(wait=False, cancel_futures=True)
        if self.worker is not None:
            await self.worker.close()

    def _worker_handle(self) -> AssignorWorker:
        if self.worker is None:
            # Imported at first use: only large KIP-848 groups need the worker's
            # process machinery (pickle, resource, subprocess); an idle node never does.
            from coordinator.groups.assignor_worker import AssignorWorker

            self.worker = AssignorWorker(self._loop())
        return self.worker

    def _worker_done(
        self,
        inputs: TargetInputs,
        computed: ComputedTarget | None,
        encode: Callable[[Record], StoredRecord],
    ) -> None:
        if not self._closed:
            result = self._core.target_computed(inputs, computed, self._now_ms())
            self._carry_out(result, encode)  # the worker encoded the target records

    def _target_done(self, inputs: TargetInputs, done: asyncio.Future[ComputedTarget]) -> None:
        if self._closed or done.cancelled():
            return
        error = done.exception()
        if error is not None:
            log.error("assignor failed: %s %d: %r", inputs.group_id, inputs.group_epoch, error)
        computed = None if error is not None else done.result()
        self._carry_out(self._core.target_computed(inputs, computed, self._now_ms()))
