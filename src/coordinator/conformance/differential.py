"""The differential run: random client actions against the broker and the model in lockstep.

Hypothesis's stateful testing draws sequences of steps (`steps`: joins, syncs, heartbeats,
leaves, commits, fetches, describes from six members of two classic groups; KIP-848 heartbeats
from three of a consumer group) and `Lockstep` sends each
to the broker under test and to the pure core; the first answer that differs fails the run, and
Hypothesis shrinks the sequence to a short one that still fails. The failure names the diverging
request and prints the command that runs the same steps again (`rebalance conformance
--bootstrap HOST:PORT --replay '...'`, which calls `replay`).

Each Hypothesis example is one run on groups of its own (`differential_rules`, the steps it
may draw), its connections pooled across runs (`differential_session`). Hypothesis is imported
here and in `differential_rules` only, so the rest of the package works without it installed.
"""

from __future__ import annotations

import asyncio
import time

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis.errors import Flaky, Unsatisfiable
from hypothesis.stateful import run_state_machine_as_test

from coordinator.conformance.broker import BrokerUnderTest
from coordinator.conformance.broker_probes import RegexNeverResolved
from coordinator.conformance.differential_rules import machine_for
from coordinator.conformance.differential_session import DifferentialReport, Session
from coordinator.conformance.lockstep import Divergence, StepNotPossible
from coordinator.conformance.steps import Wait, parse_steps
from coordinator.conformance.timing import TimingInconclusive

#: Runs per Hypothesis call: between calls the run checks its time budget.
BATCH_RUNS = 40


def run_differential(
    broker: BrokerUnderTest,
    *,
    steps: int = 10_000,
    steps_per_run: int = 50,
    budget_s: float = 300.0,
    timed: bool = False,
) -> DifferentialReport:
    """Runs of up to `steps_per_run` steps each until `steps` steps were made, one diverged
    (shrinking included in the counts) or `budget_s` passed. Call from outside any running
    event loop. `timed`: short timeouts and `wait` steps (see `TIMED_SESSION_MS`)."""
    with _session(broker, timed) as session:
        started = time.monotonic()
        try:
            session.prepare()
        except RegexNeverResolved as exc:
            return session.report(time.monotonic() - started, str(exc))
        failure = None
        while failure is None and session.steps < steps and time.monotonic() - started < budget_s:
            # Runs mostly make their full length; batches keep an eye on the budget.
            wanted = min((steps - session.steps) // steps_per_run + 1, BATCH_RUNS)
            try:
                run_state_machine_as_test(
                    machine_for(session),
                    settings=settings(
                        max_examples=wanted,
                        stateful_step_count=steps_per_run,
                        deadline=None,
                        database=None,
                        phases=(Phase.generate, Phase.shrink),
                        suppress_health_check=list(HealthCheck),
                        print_blob=False,
                        verbosity=Verbosity.quiet,  # the report says it all: nothing on stdout
                    ),
                )
            except Divergence as exc:
                failure = str(exc)
            except (Flaky, Unsatisfiable) as exc:
                found = [e for e in getattr(exc, "exceptions", ()) if isinstance(e, Divergence)]
                found = found or ([session.last_divergence] if session.last_divergence else [])
                if not found:
                    # No divergence in this batch: Hypothesis saw the same steps discarded as
                    # inconclusive in one run and not in another (timing, in a timed run), or
                    # every run discarded. Inconclusive, not failed; the next batch goes on.
                    session.inconclusive += 1
                    continue
                # A divergence the same steps did not show again: timing (see `lockstep`).
                failure = "a divergence that did not recur when the same steps ran again:\n" + (
                    str(found[0])
                )
        return session.report(time.monotonic() - started, failure)


def replay(broker: BrokerUnderTest, text: str) -> DifferentialReport:
    """Run the steps of `text` (as a failure prints them) once, in lockstep; timed (short
    timeouts) if it has a `wait` step."""
    steps = parse_steps(text)
    with _session(broker, any(isinstance(s, Wait) for s in steps)) as session:
        started = time.monotonic()
        try:
            session.prepare()
        except RegexNeverResolved as exc:
            return session.report(time.monotonic() - started, str(exc))
        failure = None
        lockstep = session.start()
        try:
            for step in steps:
                session.run(lockstep.apply(step))
        except (Divergence, StepNotPossible) as exc:
            failure = str(exc)
        except TimingInconclusive as exc:
            session.inconclusive += 1
            failure = f"inconclusive (the machine was too slow for the timeouts): {exc}"
        finally:
            try:
                session.end(lockstep)
            except Divergence as exc:
                failure = failure or str(exc)
        log = tuple(lockstep.log) if failure is None else ()
        return session.report(time.monotonic() - started, failure, log)


class _session:
    """A session on an event loop of its own, its pooled connections closed at the end."""

    def __init__(self, broker: BrokerUnderTest, timed: bool = False) -> None:
        self.loop = asyncio.new_event_loop()
        self.session = Session(broker, self.loop, timed)

    def __enter__(self) -> Session:
        return self.session

    def __exit__(self, *exc: object) -> None:
        try:
            self.loop.run_until_complete(self.session.pool.close())
        finally:
            self.loop.close()
