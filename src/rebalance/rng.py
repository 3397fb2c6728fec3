"""A seedable random source for the core, which may not import `random` (it must stay
deterministic and replayable: the same seed and inputs give the same member ids and leaders).

SplitMix64 is small, fast and statistically good enough for choosing a leader and making UUIDs.
"""

from __future__ import annotations

import uuid
from typing import Protocol

_MASK64 = (1 << 64) - 1


class RandomSource(Protocol):
    """What the core needs from randomness: an index below `n` and fresh UUIDs."""

    def below(self, n: int) -> int: ...

    def uuid4(self) -> uuid.UUID: ...


class SplitMix64:
    """Deterministic PRNG (Steele, Lea, Flood 2014) implementing `RandomSource`."""

    __slots__ = ("_state",)

    def __init__(self, seed: int) -> None:
        self._state = seed & _MASK64

    def next_u64(self) -> int:
        self._state = (self._state + 0x9E3779B97F4A7C15) & _MASK64
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        if n <= 0:
            raise ValueError(f"n must be positive, got {n}")
        return self.next_u64() % n

    def uuid4(self) -> uuid.UUID:
        return uuid.UUID(int=(self.next_u64() << 64) | self.next_u64(), version=4)
