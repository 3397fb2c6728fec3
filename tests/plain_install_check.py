"""What installing the wheel (no extras) gives: run by `scripts/check-plain-install` with the
Python of a fresh virtual environment holding only pip, the wheel and its dependencies.

It checks that the packages come from that environment and carry `py.typed`, that no extra's
package is there, that `rebalance serve` starts and answers an ApiVersions request (one round
trip through the installed wire client), stops with status 0 on SIGTERM, that `rebalance
walkthrough` runs, that `rebalance --version` names the distribution, that `rebalance report` and
`sweep` say in one line which extra to install, and (last, as it adds Hypothesis) that the hint a
missing extra prints installs it when run as printed.
Not collected by pytest (no `test_` prefix): the suite's own environment has every extra.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import re
import shlex
import signal
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from pathlib import Path

REBALANCE = str(Path(sys.executable).parent / "rebalance")
PACKAGES = ("rebalance", "assignors", "coordinator")
EXTRAS = (
    "pyspark", "matplotlib", "aiokafka", "confluent_kafka", "pytest", "hypothesis", "psycopg",
)  # fmt: skip


def installed_from_this_environment() -> None:
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.origin is not None, f"{package} is not installed"
        where = Path(spec.origin).resolve().parent
        assert where.parent == site, f"{package} comes from {where}, not {site}"
        assert (where / "py.typed").is_file(), f"{package} has no py.typed"
    for extra in EXTRAS:
        assert importlib.util.find_spec(extra) is None, f"{extra} is installed: not a plain install"


def version_names_the_distribution() -> None:
    from rebalance import DISTRIBUTION, __version__

    done = subprocess.run([REBALANCE, "--version"], capture_output=True, text=True)
    assert done.stdout == f"rebalance ({DISTRIBUTION}) {__version__}\n", done
    assert importlib.metadata.version(DISTRIBUTION) == __version__


def serve_help() -> None:
    done = subprocess.run([REBALANCE, "serve", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "--data-dir" in done.stdout, done.stderr


async def _serve_and_ask_api_versions(data_dir: Path) -> None:
    from coordinator.testing.server import WireClient
    from coordinator.wire.api_keys import ApiKey

    server = await asyncio.create_subprocess_exec(
        REBALANCE, "serve", "--bind", "127.0.0.1:0", "--data-dir", str(data_dir),
        "--set", "log.retention.hours=1",  # read from the wheel's table of Kafka's settings
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert server.stderr is not None
    while True:
        line = (await asyncio.wait_for(server.stderr.readline(), timeout=60)).decode()
        assert line, "rebalance serve exited before listening"
        if found := re.search(r"listening on 127\.0\.0\.1:(\d+)", line):
            break
    client = await WireClient.connect("127.0.0.1", int(found.group(1)))
    versions = await client.request(ApiKey.API_VERSIONS, 3, {})
    await client.close()
    keys = {entry.api_key for entry in versions.api_keys}
    assert {3, 10, 11, 14} <= keys, f"ApiVersions lists {sorted(keys)}"  # + group APIs
    server.send_signal(signal.SIGTERM)
    rest = (await asyncio.wait_for(server.stderr.read(), timeout=60)).decode()
    assert await server.wait() == 0, rest


def serve_answers_api_versions() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        asyncio.run(_serve_and_ask_api_versions(Path(scratch) / "data"))


def walkthrough_runs() -> None:
    done = subprocess.run([REBALANCE, "walkthrough"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout, done.stderr


def assignors_run_at_scale() -> None:
    """The array path of the assignors (numpy, a plain dependency) works in a plain install."""
    import assignors

    topics = [f"t{k}" for k in range(10)]
    members = {f"m{k:03d}": topics for k in range(100)}
    fresh = assignors.assign("uniform", members, dict.fromkeys(topics, 1000))
    assert sorted(len(tps) for tps in fresh.values()) == [100] * 100


def analytics_say_which_extra() -> None:
    for command in (["report", "events", "--out", "out"], ["sweep", "--out", "out"]):
        done = subprocess.run([REBALANCE, *command], capture_output=True, text=True)
        expected = (
            f"rebalance {command[0]}: needs the 'analytics' extra (pyspark, matplotlib): "
            "pip install 'rebalance-kafka[analytics]'\n"
        )
        assert (done.returncode, done.stderr) == (1, expected), (done.returncode, done.stderr)


def consumer_demo_says_which_extra() -> None:
    done = subprocess.run(
        [REBALANCE, "demo", "--protocol", "consumer"], capture_output=True, text=True
    )
    expected = (
        "rebalance demo: needs the 'consumer' extra (confluent_kafka): "
        "pip install 'rebalance-kafka[consumer]'\n"
    )
    assert (done.returncode, done.stderr) == (1, expected), (done.returncode, done.stderr)


def cluster_store_says_which_extra() -> None:
    """The cluster modules import without psycopg, and opening the store says which extra."""
    from coordinator.cluster.store import PostgresRecordStore
    from coordinator.errors import MissingExtraError

    try:
        PostgresRecordStore("postgresql://postgres@127.0.0.1:1/none", epochs=None)  # type: ignore[arg-type]
    except MissingExtraError as error:
        expected = "needs the 'cluster' extra (psycopg): pip install 'rebalance-kafka[cluster]'"
        assert str(error) == expected, str(error)
    else:
        raise AssertionError("the cluster store opened without psycopg")


REPLAY = [REBALANCE, "conformance", "--bootstrap", "127.0.0.1:1", "--replay", "join a0"]
HINTED = "rebalance conformance: needs the 'conformance' extra (hypothesis): "


def differential_replay_says_which_extra() -> None:
    done = subprocess.run(REPLAY, capture_output=True, text=True)
    expected = HINTED + "pip install 'rebalance-kafka[conformance]'\n"
    assert (done.returncode, done.stderr) == (1, expected), (done.returncode, done.stderr)


def the_printed_hint_installs_the_extra() -> None:
    """The hint run as printed (its `pip` this environment's): the replay then gets as far as
    connecting (nothing listens on port 1)."""
    hint = subprocess.run(REPLAY, capture_output=True, text=True).stderr.removeprefix(HINTED)
    command = shlex.split(hint)
    assert command[:2] == ["pip", "install"], hint
    pip = str(Path(sys.executable).parent / "pip")
    installed = subprocess.run([pip, *command[1:]], capture_output=True, text=True)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    done = subprocess.run(REPLAY, capture_output=True, text=True)
    assert done.stderr.startswith("rebalance conformance: cannot connect to 127.0.0.1:1"), done


CHECKS: list[Callable[[], None]] = [
    installed_from_this_environment,
    version_names_the_distribution,
    serve_help,
    serve_answers_api_versions,
    walkthrough_runs,
    assignors_run_at_scale,
    analytics_say_which_extra,
    consumer_demo_says_which_extra,
    differential_replay_says_which_extra,
    cluster_store_says_which_extra,
    the_printed_hint_installs_the_extra,  # last: it installs Hypothesis
]


def main() -> int:
    failed = 0
    for check in CHECKS:
        try:
            check()
        except AssertionError as error:
            failed += 1
            print(f"FAILED {check.__name__}: {error}")
        else:
            print(f"ok {check.__name__}")
    print(f"plain-install: {len(CHECKS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
