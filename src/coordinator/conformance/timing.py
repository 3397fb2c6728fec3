"""Time in the timed differential run: the model's manual clock against the broker's real one.

The model's clock moves only in `wait` steps, by exactly the time waited; the broker's timers
run on real time, which also passes while steps are sent and answered (and a sleep may
overshoot). So the real time since any moment of a run is at least the model time since then,
and the excess, the *drift*, only grows. A timer armed when the drift was `a` fires on the broker
once `model_now + drift_now >= deadline + a`, and in the model once `model_now >= deadline`.
The two agree unless a deadline lies near the present, so the run keeps deadlines away from it:

* a wait does not end within `MARGIN_MS` after a deadline it passes (the broker's timer has
  fired and been handled by the time the run looks), nor before a deadline due within the
  drift since that timer was armed plus `MARGIN_MS + ROOM_MS` (the broker's has not fired, and
  the next steps have room). A wait's end that would be near a deadline is moved past it: the
  time waited is the step's at least, and more where a timer was due near its end;
* after every step (and after a wait's sleep) the run checks that no deadline the model has not
  reached is within the drift since its arming plus `MARGIN_MS`: if one is, the broker may have
  fired a timer the model has not, the step's answers prove nothing, and the run is discarded
  as inconclusive (`TimingInconclusive`; a loaded machine makes more of these, never a false
  divergence).

The drift a timer was armed at is what the model's timer wheel shows after the step that armed
it; a timer armed while the model's clock moved through a wait (by another timer firing) is
given the least drift of the timers that fired in that wait: the broker arms it when its parent
fires, at no less drift than the parent's.
"""

from __future__ import annotations

import time

from rebalance.testing import GroupHarness
from rebalance.timers import TimerKey

#: Slack for a broker timer's own latency and the request that observes it (ms).
MARGIN_MS = 50
#: Time left after a wait before the next deadline, for the steps that follow (ms).
ROOM_MS = 80
#: A wait's end moves past at most this many timers due near it (cascades end when groups do).
MAX_MOVES = 64


class TimingInconclusive(Exception):
    """A broker timer may have fired that the model's has not (or the reverse): the machine was
    too slow for the run's timeouts at this step. Not a divergence."""


class RunClock:
    """The model's clock against real time over one run, and the drift each timer was armed at."""

    def __init__(self, harness: GroupHarness) -> None:
        self.harness = harness
        self._real0 = time.monotonic()
        self._model0 = harness.clock.now_ms()
        #: key -> (deadline, arming order, drift when armed)
        self._armed: dict[TimerKey, tuple[int, int, float]] = {}

    def drift_ms(self) -> float:
        real = (time.monotonic() - self._real0) * 1000
        return real - (self.harness.clock.now_ms() - self._model0)

    def note_armed(self, drift: float | None = None) -> None:
        """Record the drift of timers armed since the last call (call after every model step)."""
        now = self.drift_ms() if drift is None else drift
        known = self._armed
        self._armed = {
            key: known[key] if key in known and known[key][:2] == entry else (*entry, now)
            for key, entry in self.harness.timer.entries().items()
        }

    def check(self, what: str) -> None:
        """Raise `TimingInconclusive` if a deadline the model has not reached may have passed on
        the broker (the drift since its arming plus `MARGIN_MS` reaches it)."""
        now = self.harness.clock.now_ms()
        drift = self.drift_ms()
        for key, (deadline, _, armed_at) in self._armed.items():
            ahead = deadline - now
            if ahead <= drift - armed_at + MARGIN_MS:
                raise TimingInconclusive(
                    f"{what}: the {key[0]} timer of {key[1]} is due in {ahead} ms of model time, "
                    f"within the {drift - armed_at:.0f} ms real time ran ahead since it was armed"
                )

    def wait(self, ms: int) -> int:
        """Move the model's clock by `ms` or a little more (see the module docstring), firing
        its timers; return the time to wait, which the caller then sleeps."""
        harness = self.harness
        start = harness.clock.now_ms()
        end = start + ms
        drift = self.drift_ms()
        least = drift
        for _ in range(MAX_MOVES):
            armed = self._armed
            due = [(d, k) for k, (d, _, _) in armed.items()]
            if not due:
                break
            deadline, key = min(due)
            near = end + (drift - armed[key][2]) + MARGIN_MS + ROOM_MS
            if deadline > near:
                break
            # Passed, or due too near the end to tell: fire it and end well after it.
            end = max(end, deadline + MARGIN_MS)
            least = min(least, armed[key][2])
            harness.advance(max(deadline - harness.clock.now_ms(), 0))
            self.note_armed(least)
        else:
            raise TimingInconclusive(f"wait {ms}: timers kept falling due near its end")
        harness.advance(end - harness.clock.now_ms())
        self.note_armed(least)
        return end - start
