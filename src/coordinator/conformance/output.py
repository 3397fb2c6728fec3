"""The results as a terminal table, JSON and JUnit XML, and the summary line."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from xml.etree import ElementTree

from coordinator.conformance.broker import BrokerUnderTest
from coordinator.conformance.runner import Outcome

MARK = {"passed": "ok", "failed": "FAIL", "skipped": "skip"}


def progress_line(outcome: Outcome) -> str:
    line = f"{MARK[outcome.status]:<4} {outcome.scenario.name:<36} {outcome.seconds:6.1f} s"
    if outcome.detail:
        line += f"  {outcome.detail}"
    return line


def summary(outcomes: Sequence[Outcome]) -> str:
    count = {status: sum(o.status == status for o in outcomes) for status in MARK}
    return f"{count['passed']} passed, {count['failed']} failed, {count['skipped']} skipped"


def settings_lines(broker: BrokerUnderTest) -> list[str]:
    return [
        f"  {key} = {value} ({broker.sources[key]})"
        for key, value in sorted(broker.settings.items())
    ]


def write_json(path: Path, broker: BrokerUnderTest, outcomes: Sequence[Outcome]) -> None:
    document = {
        "broker": f"{broker.host}:{broker.port}",
        "versions": {str(k): v for k, v in sorted(broker.versions.items())},
        "settings": {
            k: {"value": v, "source": broker.sources[k]} for k, v in broker.settings.items()
        },
        "summary": summary(outcomes),
        "scenarios": [
            {
                "name": o.scenario.name,
                "rule": o.scenario.rule,
                "kafka": o.scenario.kafka,
                "status": o.status,
                "detail": o.detail,
                "seconds": round(o.seconds, 3),
            }
            for o in outcomes
        ],
    }
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def write_junit(path: Path, outcomes: Sequence[Outcome]) -> None:
    suite = ElementTree.Element(
        "testsuite",
        name="rebalance-conformance",
        tests=str(len(outcomes)),
        failures=str(sum(o.status == "failed" for o in outcomes)),
        skipped=str(sum(o.status == "skipped" for o in outcomes)),
        time=f"{sum(o.seconds for o in outcomes):.3f}",
    )
    for o in outcomes:
        case = ElementTree.SubElement(
            suite, "testcase", classname="classic", name=o.scenario.name, time=f"{o.seconds:.3f}"
        )
        if o.status == "failed":
            failure = ElementTree.SubElement(case, "failure", message=o.detail)
            failure.text = f"{o.scenario.rule}\nKafka: {o.scenario.kafka}\n{o.detail}"
        elif o.status == "skipped":
            ElementTree.SubElement(case, "skipped", message=o.detail)
    ElementTree.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
