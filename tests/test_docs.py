"""Every Python code block in README.md and docs/*.md runs here, so no example can go stale.

How a block is run depends on its fence and on an HTML comment on the line just before the
fence (invisible where the Markdown is rendered):

* ```` ```python ```` — a script: run as it is, in a namespace of its own; it must neither raise
  nor warn. What it prints is not compared (a block that shows results is a session, below).
* ```` ```pycon ```` — a Python session: `>>> ` and `... ` lines, each followed by the output it
  shows. Run with `doctest`, every output compared: `...` inside an output stands for anything
  (a random member id, a long repr cut short) and runs of whitespace compare equal.
* A block that cannot run on its own names what it needs before its fence:
  - `<!-- docs-test: server -->`: it talks to a server. One is started for it (topic `orders`
    with 3 partitions, `group.initial.rebalance.delay.ms=0`), and `127.0.0.1:9092` in the block
    is replaced with that server's address.
  - `<!-- docs-test: sasl -->`: the same, on a SASL_PLAINTEXT listener (PLAIN and SCRAM) that
    knows the users `alice` and `admin` (passwords `alice-secret`, `admin-secret`).
  - `<!-- docs-test: acls -->`: the same with ACLs on (`super.users=User:admin`).
  - `<!-- docs-test: pytest -->`: it is a test module. It is written to a file of its own and
    run by pytest twice, with pytest-asyncio in strict mode and in auto mode; it must pass both.
* Blocks in other languages (sh, json, plain text) are not run here. One `sh` block of the README,
  its install instructions (`<!-- docs-test: install -->`), is run as printed by
  `scripts/check-plain-install`, in a fresh virtual environment.
"""

from __future__ import annotations

import doctest
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from coordinator.testing.server import server_in_thread
from coordinator.wire.security.credentials import CredentialStore

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUNNABLE = {"python", "pycon"}
DIRECTIVE = re.compile(r"<!--\s*docs-test:\s*(\S+)\s*-->")
NEEDS = {"server", "sasl", "acls", "pytest"}
EXAMPLE_ADDRESS = "127.0.0.1:9092"


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    """Line number of the opening fence."""
    language: str
    needs: str | None
    code: str

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file, with the directive before each."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[index])
        if fence is None:
            index += 1
            continue
        start = index
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
        before = lines[start - 1] if start > 0 else ""
        directive = DIRECTIVE.fullmatch(before.strip())
        code = "\n".join(lines[start + 1 : end]) + "\n"
        needs = directive.group(1) if directive else None
        found.append(Block(path, start + 1, fence.group(1), needs, code))
        index = end + 1
    return found


RUNNABLE_BLOCKS = [b for path in DOCUMENTS for b in blocks(path) if b.language in RUNNABLE]


def test_the_docs_have_examples_and_only_known_directives() -> None:
    readme = [b for b in RUNNABLE_BLOCKS if b.path.name == "README.md"]
    assert len(readme) >= 5
    assert {b.language for b in RUNNABLE_BLOCKS} == RUNNABLE
    assert {b.needs for b in RUNNABLE_BLOCKS} <= NEEDS | {None}
    every = [b for path in DOCUMENTS for b in blocks(path)]
    installs = [b for b in every if b.needs == "install"]
    assert [(b.path.name, b.language) for b in installs] == [("README.md", "sh")]
    stray = [
        b.name
        for b in every
        if b.needs is not None and b.language not in RUNNABLE and b.needs != "install"
    ]
    assert not stray, f"docs-test directives before blocks that are not run: {stray}"
    python_fences = sum(
        line.strip() in {"```python", "```pycon"}
        for path in DOCUMENTS
        for line in path.read_text(encoding="utf-8").splitlines()
    )
    assert python_fences == len(RUNNABLE_BLOCKS)  # the parser missed none


@pytest.mark.parametrize("block", RUNNABLE_BLOCKS, ids=lambda b: b.name)
def test_example(block: Block, tmp_path: Path) -> None:
    if block.needs == "pytest":
        run_as_tests(block, tmp_path)
    elif block.needs == "server":
        # Sessions from 500 ms: the timed differential run's (docs/conformance.md) are 900 ms,
        # its KIP-848 members' too, which the broker sets (with a heartbeat interval below it);
        # its KIP-848 steps want a target assignment per epoch bump, not batched by time.
        quick = [
            "group.initial.rebalance.delay.ms=0",
            "group.consumer.assignment.interval.ms=0",
            "group.min.session.timeout.ms=500",
            "group.consumer.min.heartbeat.interval.ms=100",
            "group.consumer.heartbeat.interval.ms=300",
            "group.consumer.min.session.timeout.ms=500",
            "group.consumer.session.timeout.ms=900",
        ]
        with server_in_thread(topics=[("orders", 3)], settings=quick) as node:
            run(block, block.code.replace(EXAMPLE_ADDRESS, node.bootstrap))
    elif block.needs in ("sasl", "acls"):
        data_dir = tmp_path / "data"
        data_dir.mkdir()
        users = CredentialStore(data_dir)
        users.add("alice", "alice-secret")
        users.add("admin", "admin-secret")
        users.close()
        settings = [
            "group.initial.rebalance.delay.ms=0",
            "listeners=SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        ]
        if block.needs == "acls":
            settings += [
                "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users=User:admin",
            ]
        with server_in_thread(topics=[("orders", 3)], settings=settings, data_dir=data_dir) as node:
            run(block, block.code.replace(EXAMPLE_ADDRESS, node.bootstrap))
    else:
        run(block, block.code)


def run(block: Block, code: str) -> None:
    if block.language == "python":
        exec(compile(code, block.name, "exec"), {"__name__": "__docs__"})
        return
    parser = doctest.DocTestParser()
    test = parser.get_doctest(code, {"__name__": "__docs__"}, block.name, str(block.path), 0)
    assert test.examples, f"{block.name}: a pycon block without a >>> line"
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    report: list[str] = []
    outcome = runner.run(test, out=report.append, clear_globs=True)
    assert outcome.failed == 0, f"{block.name} (fence on line {block.line}):\n" + "".join(report)


def run_as_tests(block: Block, tmp_path: Path) -> None:
    module = tmp_path / "test_docs_example.py"
    module.write_text(block.code, encoding="utf-8")
    for mode in ("strict", "auto"):
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error",
             "-o", f"asyncio_mode={mode}", "-o", "asyncio_default_fixture_loop_scope=function",
             module.name],
            cwd=tmp_path, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, f"{block.name}, {mode} mode:\n{done.stdout}{done.stderr}"
        assert re.search(r"\b[1-9]\d* passed\b", done.stdout), done.stdout
        assert "skipped" not in done.stdout, done.stdout
