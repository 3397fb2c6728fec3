"""Assignor sweep: scenarios built from a seed inside Spark tasks, one row per assignor and step.

One Spark task per (scenario, assignor): it rebuilds the group from the seed, assigns fresh,
then runs `churn` steps alternating a leave and a join, passing the previous assignment as the
members' owned partitions. Our assignors run through the registry; kafka-python's assignors of
the same algorithm (range, roundrobin, sticky, cooperative-sticky) run as peers on the same
inputs, each fed the metadata its own client would send. kafka-python ignores racks (it has no
KIP-881), so with racks its rows show what rack-blind placement gives.

Minimum moves rule (equal subscriptions only, null otherwise): a leave must move at least the
leaver's partitions (nobody else can keep them); a join must move at least
floor(total / new member count) partitions, the newcomer's smallest balanced share.

Cooperative assignors (name containing "cooperative", KIP-429) withhold partitions that change
owner; their owners revoke them and the group rebalances again. A step therefore runs rounds
until nothing is withheld (at most `MAX_ROUNDS`), each round fed the previous round's result as
owned: `moved` compares the step's input with the last round, so it is comparable with the eager
assignors and with the minimum; `compute_ms` is the sum over rounds; `withheld` is what the
first round held back; `valid` also requires every round to be cooperative-safe and the step to
converge. Compute time covers the assign call only, not building its inputs.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

import assignors
from coordinator.analytics.sweep_group import (
    SCENARIO_COLUMNS,
    Assignment,
    Group,
    Scenario,
    assigned_count,
    balance,
    build_group,
    cooperative_safe,
    digest,
    is_valid,
    moved,
    rack_locality,
)

OURS = "rebalance"
KAFKA_PYTHON = "kafka-python"
DEFAULT_ASSIGNORS = ["range", "roundrobin", "sticky", "cooperative-sticky", "uniform"]
PEER_ALGORITHMS = ("range", "roundrobin", "sticky", "cooperative-sticky")
"""Our assignors that kafka-python also ships (kafka_python_peer.ALGORITHMS, which the driver
cannot import when kafka-python is missing there)."""
SLOW_PEERS = ("sticky", "cooperative-sticky")
PEER_MAX_PARTITIONS = 1000
"""kafka-python's sticky family is superlinear in partitions (about 0.6 s a call at 1,000
mixed-subscription partitions, 5 s at 2,000): above this many, its rows are skipped (reason
recorded)."""
MAX_ROUNDS = 4
"""Kafka's cooperative tests allow up to 4 rounds for a rebalance to converge."""

ROW_SCHEMA = T.StructType(
    [
        T.StructField("members", T.IntegerType()),
        T.StructField("topics", T.IntegerType()),
        T.StructField("partitions_per_topic", T.IntegerType()),
        T.StructField("subscriptions", T.StringType()),
        T.StructField("racks", T.IntegerType()),
        T.StructField("seed", T.LongType()),
        T.StructField("assignor", T.StringType()),
        T.StructField("implementation", T.StringType()),
        T.StructField("algorithm", T.StringType()),
        T.StructField("step", T.IntegerType()),
        T.StructField("event", T.StringType()),
        T.StructField("status", T.StringType()),
        T.StructField("reason", T.StringType()),
        T.StructField("balance", T.IntegerType()),
        T.StructField("moved", T.IntegerType()),
        T.StructField("min_moves", T.IntegerType()),
        T.StructField("valid", T.BooleanType()),
        T.StructField("rounds", T.IntegerType()),
        T.StructField("withheld", T.IntegerType()),
        T.StructField("rack_local", T.DoubleType()),
        T.StructField("compute_ms", T.DoubleType()),
        T.StructField("digest", T.StringType()),
    ]
)
COLUMNS = [f.name for f in ROW_SCHEMA.fields]

Task = tuple[Scenario, str, str]
"""(scenario, implementation, algorithm)."""


class Runner(Protocol):
    """One implementation of one algorithm: assigns a group, timing only the assign call."""

    @property
    def implementation(self) -> str: ...

    @property
    def algorithm(self) -> str: ...

    def assign(self, group: Group, owned: Assignment, generation: int) -> tuple[Assignment, float]:
        """The assignment (every member present) and the time `assign` took, in ms."""
        ...


@dataclass(frozen=True)
class OurRunner:
    """An assignor from our registry, given member and replica racks when the scenario has them."""

    algorithm: str
    implementation: str = OURS

    def assign(self, group: Group, owned: Assignment, generation: int) -> tuple[Assignment, float]:
        spec = assignors.group_spec(
            group.subscriptions,
            owned=owned,
            generations=dict.fromkeys(owned, generation),
            member_racks=group.member_racks,
        )
        topics = assignors.StaticTopics(group.partitions, group.replica_racks)
        assignor = assignors.get(self.algorithm)
        start = time.perf_counter()
        result = assignor.assign(spec, topics)
        elapsed = (time.perf_counter() - start) * 1000
        return {m: sorted(result.get(m, [])) for m in spec.members}, elapsed


@dataclass(frozen=True)
class PeerRunner:
    """kafka-python's assignor of the same algorithm, on the members its clients would send."""

    algorithm: str
    peer: Any  # the coordinator.analytics.kafka_python_peer module, imported in the task
    implementation: str = KAFKA_PYTHON

    def assign(self, group: Group, owned: Assignment, generation: int) -> tuple[Assignment, float]:
        cluster = self.peer.FakeCluster(group.partitions)
        joining = self.peer.members(
            group.subscriptions, algorithm=self.algorithm, owned=owned, generation=generation
        )
        assignor = self.peer.assignor_for(self.algorithm)
        start = time.perf_counter()
        raw = assignor.assign(cluster, joining)
        elapsed = (time.perf_counter() - start) * 1000
        result: Assignment = self.peer.flatten(raw)
        return result, elapsed


def label(implementation: str, algorithm: str) -> str:
    """The `assignor` column: our names as they are, peers prefixed (`kafka-python:sticky`)."""
    return algorithm if implementation == OURS else f"{implementation}:{algorithm}"


def is_cooperative(algorithm: str) -> bool:
    return "cooperative" in algorithm


@dataclass(frozen=True)
class StepResult:
    assignment: Assignment
    rounds: int
    withheld: int
    compute_ms: float
    safe: bool


def run_step(runner: Runner, group: Group, previous: Assignment, generation: int) -> StepResult:
    """One rebalance: a single round, or cooperative rounds until nothing is withheld."""
    owned = {m: previous[m] for m in group.subscriptions if m in previous}
    total = group.subscribed_partitions()
    result, elapsed = runner.assign(group, owned, generation)
    rounds, withheld = 1, total - assigned_count(result)
    if not is_cooperative(runner.algorithm):
        return StepResult(result, rounds, withheld, elapsed, True)
    safe = cooperative_safe(owned, result)
    while assigned_count(result) < total and rounds < MAX_ROUNDS:
        owned = result
        result, more = runner.assign(group, owned, generation + rounds)
        safe = safe and cooperative_safe(owned, result)
        rounds, elapsed = rounds + 1, elapsed + more
    return StepResult(result, rounds, withheld, elapsed, safe)


def _churn(group: Group, step: int, previous: Assignment, equal: bool) -> tuple[str, int | None]:
    """Apply step `step`'s membership change; returns the event and the minimum moves."""
    if step % 2 == 1 and len(group.subscriptions) > 1:
        leaver = sorted(group.subscriptions)[0]
        group.remove(leaver)
        event, minimum = "leave", len(previous.get(leaver, []))  # its partitions must move
    else:
        total = sum(len(tps) for tps in previous.values())
        group.add(f"n{step:05d}", list(group.template))
        event, minimum = "join", total // len(group.subscriptions)
    return event, minimum if equal else None


def _base(scenario: Scenario, implementation: str, algorithm: str) -> dict[str, Any]:
    """A row with the scenario and assignor filled in, every measure null."""
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row.update(zip(SCENARIO_COLUMNS, scenario, strict=True))
    row.update(
        assignor=label(implementation, algorithm),
        implementation=implementation,
        algorithm=algorithm,
    )
    return row


def _measured(
    row: dict[str, Any], group: Group, previous: Assignment, outcome: StepResult
) -> dict[str, Any]:
    after = outcome.assignment
    row.update(
        status="ok",
        balance=balance(after, group.subscriptions),
        moved=moved(previous, after),
        valid=outcome.safe and is_valid(after, group.subscriptions, group.partitions),
        rounds=outcome.rounds,
        withheld=outcome.withheld,
        rack_local=rack_locality(after, group.member_racks, group.replica_racks),
        compute_ms=outcome.compute_ms,
        digest=digest(after),
    )
    return row


def run_chain(scenario: Scenario, runner: Runner, churn: int) -> Iterator[dict[str, Any]]:
    """Fresh assignment then `churn` steps; an assignor that raises ends its chain (error row)."""
    group = build_group(scenario)
    equal = scenario[3] == "equal"
    previous: Assignment = {}
    generation = 1
    for step in range(churn + 1):
        event, minimum = ("fresh", 0) if step == 0 else _churn(group, step, previous, equal)
        row = _base(scenario, runner.implementation, runner.algorithm)
        row.update(step=step, event=event, min_moves=minimum)
        try:
            outcome = run_step(runner, group, previous, generation)
        except Exception as error:  # the assignor's own failure is a result worth recording
            row.update(status="error", valid=False, reason=f"{type(error).__name__}: {error}")
            yield row
            return
        yield _measured(row, group, previous, outcome)
        previous, generation = outcome.assignment, generation + outcome.rounds


def _peer_runner(task: Task, peer_max_partitions: int) -> PeerRunner | str:
    """The peer runner, or why this task has no peer rows (kafka-python missing, too big)."""
    (_, topics, per_topic, *_), _, algorithm = task
    if algorithm in SLOW_PEERS and topics * per_topic > peer_max_partitions:
        return f"over --peer-max-partitions {peer_max_partitions}"
    try:
        from coordinator.analytics import kafka_python_peer
    except ImportError as error:
        return f"kafka-python not importable on the executor ({error})"
    return PeerRunner(algorithm, kafka_python_peer)


def run_task(task: Task, churn: int, peer_max_partitions: int) -> list[tuple[Any, ...]]:
    """The rows of one (scenario, implementation, algorithm), as tuples in `ROW_SCHEMA` order."""
    scenario, implementation, algorithm = task
    runner: Runner | str = OurRunner(algorithm)
    if implementation == KAFKA_PYTHON:
        runner = _peer_runner(task, peer_max_partitions)
    if isinstance(runner, str):
        rows = [
            _base(scenario, implementation, algorithm) | {"status": "skipped", "reason": runner}
        ]
    else:
        rows = list(run_chain(scenario, runner, churn))
    return [tuple(r[c] for c in COLUMNS) for r in rows]


def plan(scenarios: list[Scenario], names: list[str], peers: bool) -> list[Task]:
    """Every (scenario, implementation, algorithm), biggest groups first so they start early."""
    runners = [(OURS, n) for n in names]
    if peers:
        runners += [(KAFKA_PYTHON, n) for n in names if n in PEER_ALGORITHMS]
    tasks = [(s, impl, algorithm) for s in scenarios for impl, algorithm in runners]
    return sorted(tasks, key=lambda t: -(t[0][0] * t[0][1] * t[0][2]))


def sweep(
    spark: SparkSession,
    scenarios: list[Scenario],
    names: list[str],
    churn: int,
    *,
    peers: bool = True,
    peer_max_partitions: int = PEER_MAX_PARTITIONS,
) -> DataFrame:
    """One Spark task per scenario and assignor; only the result rows come back.

    Locally the Python workers must run this interpreter (the one with `assignors` installed),
    not whatever `python3` is first on PATH; on a cluster PYSPARK_PYTHON decides as usual.
    """
    context = spark.sparkContext
    if (context.master or "").startswith("local"):
        context.pythonExec = sys.executable
    tasks = plan(scenarios, names, peers)
    rdd = context.parallelize(tasks, max(1, len(tasks)))
    rows = rdd.flatMap(lambda task: run_task(task, churn, peer_max_partitions))
    return spark.createDataFrame(rows, ROW_SCHEMA)
