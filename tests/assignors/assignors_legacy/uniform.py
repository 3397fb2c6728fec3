"""The server-side "uniform" assignor of KIP-848 (balanced and sticky).

In the KIP-848 protocol the broker computes a *target* assignment and members converge on it by
revoking before acquiring (member epochs), so the assignor itself need not withhold anything.
``owned`` holds each member's current target assignment; generations play no role (the target
is authoritative, so claims never conflict in practice; if they do, both claims are dropped).
Homogeneous and heterogeneous subscriptions are both handled by `assignors.balance`: quotas with
maximal keeping for equal subscriptions, least-loaded placement plus per-topic levelling
otherwise. Re-running on a balanced assignment returns it unchanged (the "stability" property
Kafka's uniform assignor gained with KAFKA-18688). Rack awareness is off, as in Kafka since
KAFKA-16694.
"""

from __future__ import annotations

from assignors.spec import GroupAssignment, GroupSpec, TopicDescriber

from .balance import balance


class UniformAssignor:
    """Balanced and sticky target assignment for the consumer (KIP-848) protocol."""

    @property
    def name(self) -> str:
        return "uniform"

    def assign(self, spec: GroupSpec, topics: TopicDescriber) -> GroupAssignment:
        return balance(
            spec, topics, rack_aware=False, use_generations=False, extras_last=True
        ).assignment
