"""Assignor sweep: scenarios built from a seed inside Spark tasks, one row per assignor and step.

Minimum moves rule (equal subscriptions only, null otherwise): a leave must move at least the
leaver's partitions (nobody else can keep them); a join must move at least
floor(total / new member count) partitions, the newcomer's smallest balanced share.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Iterator
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

import assignors

Scenario = tuple[int, int, int, str, int, int]

ROW_SCHEMA = T.StructType(
    [
        T.StructField("members", T.IntegerType()),
        T.StructField("topics", T.IntegerType()),
        T.StructField("partitions_per_topic", T.IntegerType()),
        T.StructField("subscriptions", T.StringType()),
        T.StructField("racks", T.IntegerType()),
        T.StructField("seed", T.LongType()),
        T.StructField("assignor", T.StringType()),
        T.StructField("step", T.IntegerType()),
        T.StructField("event", T.StringType()),
        T.StructField("balance", T.IntegerType()),
        T.StructField("moved", T.IntegerType()),
        T.StructField("min_moves", T.IntegerType()),
        T.StructField("valid", T.BooleanType()),
        T.StructField("compute_ms", T.DoubleType()),
    ]
)


def build_group(scenario: Scenario) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Deterministic group from the scenario alone, so any executor rebuilds the same one."""
    members, topics, per_topic, kind, _racks, seed = scenario
    rng = random.Random(seed)
    names = [f"t{i}" for i in range(topics)]
    subs: dict[str, list[str]] = {}
    for m in range(members):
        if kind == "equal" or topics == 1:
            subs[f"m{m:05d}"] = list(names)
        else:
            subs[f"m{m:05d}"] = sorted(rng.sample(names, rng.randint(1, topics)))
    return subs, dict.fromkeys(names, per_topic)


def _owners(assignment: dict[str, list[tuple[str, int]]]) -> dict[tuple[str, int], str]:
    return {tp: m for m, tps in assignment.items() for tp in tps}


def is_valid(
    assignment: dict[str, list[tuple[str, int]]],
    subs: dict[str, list[str]],
    partitions: dict[str, int],
) -> bool:
    """Every subscribed partition assigned exactly once, and only to a subscriber."""
    seen = [tp for tps in assignment.values() for tp in tps]
    wanted = {(t, p) for t in {t for ts in subs.values() for t in ts} for p in range(partitions[t])}
    if len(seen) != len(set(seen)) or set(seen) != wanted:
        return False
    return all(t in subs[m] for m, tps in assignment.items() for t, _ in tps)


def balance(assignment: dict[str, list[tuple[str, int]]], subs: dict[str, list[str]]) -> int:
    """Max-min partition count among members with the same subscription, worst over the classes."""
    classes: dict[tuple[str, ...], list[int]] = {}
    for m, tps in assignment.items():
        classes.setdefault(tuple(subs[m]), []).append(len(tps))
    return max((max(c) - min(c) for c in classes.values()), default=0)


def _step_row(
    scenario: Scenario,
    name: str,
    step: int,
    event: str,
    subs: dict[str, list[str]],
    partitions: dict[str, int],
    previous: dict[str, list[tuple[str, int]]],
    min_moves: int | None,
) -> tuple[dict[str, list[tuple[str, int]]], dict[str, Any]]:
    start = time.perf_counter()
    result = assignors.assign(
        name, subs, partitions, owned=previous, generations=dict.fromkeys(previous, step)
    )
    elapsed = (time.perf_counter() - start) * 1000
    before, after = _owners(previous), _owners(result)
    moved = sum(1 for tp, m in after.items() if tp in before and before[tp] != m)
    row = dict(
        zip(
            ["members", "topics", "partitions_per_topic", "subscriptions", "racks", "seed"],
            scenario,
            strict=True,
        ),
        assignor=name,
        step=step,
        event=event,
        balance=balance(result, subs),
        moved=moved,
        min_moves=min_moves,
        valid=is_valid(result, subs, partitions),
        compute_ms=elapsed,
    )
    return result, row


def run_scenario(scenario: Scenario, names: list[str], churn: int) -> Iterator[dict[str, Any]]:
    """Fresh assignment then `churn` steps alternating a leave and a join, per assignor."""
    equal = scenario[3] == "equal"
    for name in names:
        subs, partitions = build_group(scenario)
        template = next(iter(subs.values()))
        previous: dict[str, list[tuple[str, int]]] = {}
        previous, row = _step_row(scenario, name, 0, "fresh", subs, partitions, previous, 0)
        yield row
        for step in range(1, churn + 1):
            total = sum(len(tps) for tps in previous.values())
            if step % 2 == 1 and len(subs) > 1:
                leaver = sorted(subs)[0]
                minimum = len(previous.get(leaver, []))  # kept: its partitions count as moved
                del subs[leaver]
                event = "leave"
            else:
                subs[f"n{step:05d}"] = list(template)
                minimum = total // len(subs)
                event = "join"
            previous, row = _step_row(
                scenario, name, step, event, subs, partitions, previous, minimum if equal else None
            )
            yield row


def sweep(
    spark: SparkSession, scenarios: list[Scenario], names: list[str], churn: int
) -> DataFrame:
    """One Spark task per scenario; only the result rows come back.

    Locally the Python workers must run this interpreter (the one with `assignors` installed),
    not whatever `python3` is first on PATH; on a cluster PYSPARK_PYTHON decides as usual.
    """
    context = spark.sparkContext
    if (context.master or "").startswith("local"):
        context.pythonExec = sys.executable
    rdd = context.parallelize(scenarios, max(1, len(scenarios)))
    rows = rdd.flatMap(lambda s: [tuple(r.values()) for r in run_scenario(s, names, churn)])
    return spark.createDataFrame(rows, ROW_SCHEMA)
