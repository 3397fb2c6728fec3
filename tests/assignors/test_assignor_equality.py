"""The rewritten assignors give exactly the results of the frozen pre-rewrite ones.

Issue 21 replaced the insides of range, sticky, cooperative-sticky and uniform for speed; their
results must not change by a single partition. `assignors_legacy` is the oracle (a frozen copy).
Groups are drawn at random: equal and mixed subscriptions, topics missing from the metadata,
member and replica racks (with and without the rack gate open), static members, previous
assignments that are balanced, stale, overlapping or invalid, known and unknown generations. Each
group also runs through a few rounds, feeding the result back as the owned partitions (what a
cooperative group does), with members joining and leaving between rounds.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import assignors_legacy as legacy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import assignors
from assignors import PartitionAssignor, StaticTopics, TopicPartition, balance
from assignors.uniform import UniformAssignor

NAMES = ["range", "sticky", "cooperative-sticky", "uniform"]
RACKS = ["r0", "r1", "r2"]
EQUALITY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class RandomGroup:
    """One random group: every input of `assignors.assign` except the assignor name."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        topic_count = rng.randint(1, 6)
        self.topics = [f"t{k}" for k in range(topic_count)]
        # a topic may be missing from the metadata (member subscribed before it was created)
        self.partitions = {
            t: rng.choice([0, 1, 2, 3, 5, 8, 13, 30]) for t in self.topics if rng.random() < 0.9
        }
        self.members: dict[str, list[str]] = {}
        self.next_id = 0
        self.equal = rng.random() < 0.5
        self.common = self._some_topics()
        for _ in range(rng.randint(1, 25)):
            self.add_member()
        self.with_racks = rng.random() < 0.4
        self.member_racks = {
            m: rng.choice([None, "", *RACKS]) for m in self.members if self.with_racks
        }
        self.partition_racks: dict[TopicPartition, list[str]] = {}
        if self.with_racks:
            for t, count in self.partitions.items():
                for p in range(count):
                    self.partition_racks[(t, p)] = rng.sample(RACKS, rng.randint(0, 3))
        self.instance_ids = {
            m: f"i{rng.randint(0, 40)}" for m in self.members if rng.random() < 0.2
        }
        self.owned: dict[str, list[TopicPartition]] = {}
        self.generations: dict[str, int] = {}
        if rng.random() < 0.6:
            self.random_claims()

    def _some_topics(self) -> list[str]:
        return self.rng.sample(self.topics, self.rng.randint(1, len(self.topics)))

    def add_member(self) -> str:
        # ids of varying length and case so that member order is not insertion order
        member = (
            f"{self.rng.choice(['m', 'M', 'consumer-', 'c'])}{self.next_id * 7 % 31}-{self.next_id}"
        )
        self.next_id += 1
        self.members[member] = list(self.common) if self.equal else self._some_topics()
        return member

    def random_claims(self) -> None:
        """Claims that may overlap, point at unknown partitions or at unsubscribed topics."""
        rng = self.rng
        every = [(t, p) for t, count in self.partitions.items() for p in range(count)]
        every += [("t0", 99), ("gone", 0)]
        for member in self.members:
            if rng.random() < 0.8:
                self.owned[member] = rng.sample(every, rng.randint(0, min(len(every), 12)))
            if rng.random() < 0.7:
                self.generations[member] = rng.randint(-1, 3)

    def run(self, name: str, function: Callable[..., assignors.GroupAssignment]) -> object:
        return function(
            name,
            self.members,
            self.partitions,
            owned=self.owned,
            generations=self.generations,
            member_racks=self.member_racks,
            partition_racks=self.partition_racks,
            instance_ids=self.instance_ids,
        )

    def direct(self, name: str, table: Callable[[str], PartitionAssignor]) -> object:
        """The assignor object's own result (list order included), without the public sort."""
        spec = assignors.group_spec(
            self.members,
            owned=self.owned,
            generations=self.generations,
            member_racks=self.member_racks,
            instance_ids=self.instance_ids,
        )
        return table(name).assign(spec, StaticTopics(self.partitions, self.partition_racks))

    def next_round(self, result: assignors.GroupAssignment, generation: int) -> None:
        """Members report ``result`` as owned; some leave, some join, generations move on."""
        rng = self.rng
        self.owned = {m: list(tps) for m, tps in result.items()}
        self.generations = {m: generation for m in self.members if rng.random() < 0.9}
        if len(self.members) > 1 and rng.random() < 0.3:
            del self.members[rng.choice(sorted(self.members))]
        if rng.random() < 0.3:
            member = self.add_member()
            if self.with_racks:
                self.member_racks[member] = rng.choice([None, *RACKS])
        if not self.equal and rng.random() < 0.2:
            self.members[rng.choice(sorted(self.members))] = self._some_topics()


@contextmanager
def array_path_for_every_size() -> Iterator[None]:
    """Small groups normally take the list version; here they take the array path too."""
    default = balance.QUOTA_PATH_MIN_PARTITIONS
    balance.QUOTA_PATH_MIN_PARTITIONS = 0
    try:
        yield
    finally:
        balance.QUOTA_PATH_MIN_PARTITIONS = default


def assert_same_rounds(seed: int, name: str, rounds: int = 4) -> None:
    _same_rounds(seed, name, rounds)
    with array_path_for_every_size():
        _same_rounds(seed, name, rounds)


def _same_rounds(seed: int, name: str, rounds: int) -> None:
    group = RandomGroup(random.Random(seed))
    for generation in range(rounds):
        expected = group.run(name, legacy.assign)
        actual = group.run(name, assignors.assign)
        assert actual == expected, f"seed {seed}, {name}, round {generation}"
        direct = group.direct(name, assignors.get)
        assert direct == group.direct(name, legacy.ASSIGNORS.__getitem__), f"seed {seed}, {name}"
        assert isinstance(actual, dict)
        group.next_round(actual, generation + 1)


@EQUALITY
@given(seed=st.integers(0, 2**32 - 1), name=st.sampled_from(NAMES))
def test_same_result_as_before_the_rewrite(seed: int, name: str) -> None:
    assert_same_rounds(seed, name)


@pytest.mark.parametrize("name", NAMES)
def test_same_result_on_a_fixed_sweep(name: str) -> None:
    """A fixed sweep, so that a regression shows up on every run, not only when drawn."""
    for seed in range(100):
        assert_same_rounds(seed, name, rounds=3)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    ("members", "topics", "per_topic"), [(7, 3, 10), (40, 5, 100), (300, 10, 30)]
)
def test_same_result_on_medium_groups(name: str, members: int, topics: int, per_topic: int) -> None:
    """Equal subscriptions at medium size: fresh, then one member leaves, then one joins."""
    names = [f"topic-{t}" for t in range(topics)]
    partitions = dict.fromkeys(names, per_topic)
    ids = [f"member-{i:04d}" for i in range(members)]
    subscriptions = {m: names for m in ids}
    fresh = assignors.assign(name, subscriptions, partitions)
    assert fresh == legacy.assign(name, subscriptions, partitions)
    stay = {m: names for m in ids[1:]}
    owned = {m: fresh[m] for m in stay}
    generations = dict.fromkeys(stay, 1)
    after = assignors.assign(name, stay, partitions, owned=owned, generations=generations)
    assert after == legacy.assign(name, stay, partitions, owned=owned, generations=generations)
    joined = {**stay, "member-9999": names}
    again = assignors.assign(name, joined, partitions, owned=after, generations=generations)
    assert again == legacy.assign(name, joined, partitions, owned=after, generations=generations)


@EQUALITY
@given(seed=st.integers(0, 2**32 - 1))
def test_uniform_epoch_after_epoch_with_the_previous_outcome(seed: int) -> None:
    """Passing each epoch's outcome to the next changes nothing in the result."""
    assert_same_epochs(seed)


def test_uniform_epochs_on_a_fixed_sweep() -> None:
    """Seed 417 once caught every member dropping a partition of a shrunk topic (so every
    partition was kept, by members in member order) being mistaken for all pairs in order."""
    for seed in [*range(300), 417]:
        assert_same_epochs(seed)


def assert_same_epochs(seed: int) -> None:
    _same_epochs(seed)
    with array_path_for_every_size():
        _same_epochs(seed)


def _same_epochs(seed: int) -> None:
    rng = random.Random(seed)
    group = RandomGroup(rng)
    uniform = UniformAssignor()
    previous = None
    for epoch in range(5):
        spec = assignors.group_spec(group.members, owned=group.owned)
        topics = StaticTopics(group.partitions)
        outcome = uniform.assign_incremental(spec, topics, previous)
        expected = legacy.ASSIGNORS["uniform"].assign(spec, topics)
        assert outcome.assignment == expected, f"seed {seed}, epoch {epoch}"
        previous = outcome
        group.next_round(outcome.assignment, epoch + 1)
        if rng.random() < 0.3:  # a member reports something else than its last result
            member = rng.choice(sorted(group.members))
            group.owned[member] = group.owned.get(member, [])[1:]
        if rng.random() < 0.3:  # a topic is created, grows, shrinks or goes
            topic = rng.choice([*group.topics, "t9"])
            group.partitions[topic] = rng.choice([0, 1, 4, 9, 31])
            if group.partitions[topic] == 0 and rng.random() < 0.5:
                del group.partitions[topic]
            for topics in group.members.values():
                if topic not in topics and (group.equal or rng.random() < 0.5):
                    topics.append(topic)
