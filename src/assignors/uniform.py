"""The server-side "uniform" assignor of KIP-848 (balanced and sticky).

In the KIP-848 protocol the broker computes a *target* assignment and members converge on it by
revoking before acquiring (member epochs), so the assignor itself need not withhold anything.
``owned`` holds each member's current target assignment; generations play no role (the target
is authoritative, so claims never conflict in practice; if they do, both claims are dropped).
Homogeneous and heterogeneous subscriptions are both handled by `assignors.balance`: quotas with
maximal keeping for equal subscriptions, least-loaded placement plus per-topic levelling
otherwise. Re-running on a balanced assignment returns it unchanged (the "stability" property
Kafka's uniform assignor gained with KAFKA-18688). Rack awareness is off, as in Kafka since
KAFKA-16694. With equal subscriptions, the larger quotas the members over the minimum leave go to
the last members in member order, as Kafka 4.4's homogeneous builder gives them (a member at or
under the minimum gives its extra up while enough members follow it).
"""

from __future__ import annotations

from . import recall
from .balance import BalanceOutcome, balance
from .spec import GroupAssignment, GroupSpec, TopicDescriber


class UniformAssignor:
    """Balanced and sticky target assignment for the consumer (KIP-848) protocol."""

    sorted_output = True
    """Returns fresh lists sorted by (topic, partition); `assignors.assign` relies on it."""

    @property
    def name(self) -> str:
        return "uniform"

    def assign(self, spec: GroupSpec, topics: TopicDescriber) -> GroupAssignment:
        """The target; the run is remembered (`assignors.recall`) so that the next epoch, handed
        this result back as owned, need not decode it (the same result either way)."""
        outcome = balance(
            spec,
            topics,
            rack_aware=False,
            use_generations=False,
            previous=recall.hint_for(spec.members.keys()),
            keep_hint=True,
            extras_last=True,
        )
        if outcome.hint is not None:
            recall.remember(outcome.hint)
        return outcome.assignment

    def assign_incremental(
        self, spec: GroupSpec, topics: TopicDescriber, previous: BalanceOutcome | None = None
    ) -> BalanceOutcome:
        """`assign` for a caller that keeps the outcome from one group epoch to the next.

        ``outcome.assignment`` is exactly what `assign` returns. Passing the previous epoch's
        outcome lets members whose owned partitions are that epoch's result (as tuples: the
        same pair objects make the check a pointer comparison) skip decoding, so an epoch that
        changes one member costs in proportion to that member's partitions plus a few array
        passes, not to decoding every partition of the group.
        """
        return balance(
            spec,
            topics,
            rack_aware=False,
            use_generations=False,
            previous=previous.hint if previous is not None else None,
            keep_hint=True,
            extras_last=True,
        )
