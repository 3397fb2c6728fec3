"""`rebalance serve`: run a node until SIGTERM/SIGINT.

    rebalance serve --bind 127.0.0.1:9092 --data-dir ./data --topic orders:3 --set num.partitions=2

The console script (`coordinator.cli.main`) adds these options with `add_serve_arguments` and calls
`serve_main(args)`. The group coordinator joins through `extensions` and `claims` (see
`coordinator.node.app` and `coordinator.node.config`). On SIGTERM the node stops accepting, lets
in-flight requests (and their writes) finish, closes its stores and returns exit status 0. Logs go
to stderr. A start that fails ends with one line and status 1 (2 for a bad setting): see
`coordinator.command_line`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from coordinator.cli.log_format import JsonFormatter
from coordinator.cli.properties_file import read_properties
from coordinator.command_line import OneLineParser, add_debug_argument, run_command
from coordinator.errors import UsageError
from coordinator.node.collector import tune_for_serving
from coordinator.node.config import ConfigError, ServerConfig, SettingClaim, parse_settings
from coordinator.partition_log.topics import InvalidTopicError, check_topic_name

if TYPE_CHECKING:  # the console script imports this module for its options: keep it light
    from coordinator.node.app import Extension

logger = logging.getLogger("coordinator.serve")


DEFAULT_BIND = ("127.0.0.1", 9092)


def parse_bind(text: str) -> tuple[str, int]:
    """`HOST:PORT` (IPv6 as `[::1]:9092`); port 0 picks a free port."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    if int(port_text) > 65535:
        raise argparse.ArgumentTypeError(
            f"port {int(port_text)} is out of range (0-65535; 0 picks a free port) in {text!r}"
        )
    return host.strip("[]"), int(port_text)


def parse_topic(text: str) -> tuple[str, int]:
    """`NAME:PARTITIONS` for a topic created at start (existing topics are kept as they are)."""
    name, sep, count = text.rpartition(":")
    if not sep or not name or not count.isdigit():
        raise argparse.ArgumentTypeError(f"expected NAME:PARTITIONS, got {text!r}")
    if int(count) < 1:
        raise argparse.ArgumentTypeError(f"partitions must be at least 1, got {text!r}")
    try:
        check_topic_name(name)
    except InvalidTopicError as exc:
        raise argparse.ArgumentTypeError(
            f"{exc} in {text!r}: use 1-249 of a-z A-Z 0-9 . _ -"
        ) from None
    return name, int(count)


def parse_advertise(text: str) -> tuple[str, int]:
    """`HOST:PORT` clients are told to connect to; the port must be a real one (not 0)."""
    try:
        host, port = parse_bind(text)
    except argparse.ArgumentTypeError:
        port = 0
    if port == 0:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT with a port of 1-65535, got {text!r}")
    return host, port


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bind", type=parse_bind, default=None, metavar="HOST:PORT",
        help="address to listen on (default 127.0.0.1:9092; port 0 picks a free one); not "
        "with the listeners setting, which says it instead",
    )  # fmt: skip
    parser.add_argument(
        "--data-dir", type=Path, default=None, metavar="DIR",
        help="directory for topic logs and coordinator state (required unless the settings "
        "give log.dirs)",
    )  # fmt: skip
    parser.add_argument(
        "--config", type=Path, default=None, metavar="FILE",
        help="a Kafka server.properties file: its settings, as if given by --set before the "
        "--set options (which override it)",
    )  # fmt: skip
    parser.add_argument(
        "--advertise", type=parse_advertise, default=None, metavar="HOST:PORT",
        help="address given to clients in Metadata and FindCoordinator (default: the bound "
        "address; for a wildcard bind such as 0.0.0.0, the host name)",
    )  # fmt: skip
    parser.add_argument(
        "--topic", type=parse_topic, action="append", default=[], metavar="NAME:PARTITIONS",
        help="create this topic at start (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", dest="settings",
        help="broker setting, Kafka names (repeatable), e.g. num.partitions=3; any key of "
        "Kafka's broker is accepted, those this node does not act on are announced at start",
    )  # fmt: skip
    parser.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="stderr log level (default INFO: starts, stops and every group's state changes)",
    )  # fmt: skip
    parser.add_argument(
        "--log-format", default="text", choices=["text", "json"],
        help="stderr log lines as text (default) or one JSON object each, for log shippers",
    )  # fmt: skip
    add_debug_argument(parser)


async def run_serve(
    args: argparse.Namespace,
    *,
    extensions: Sequence[Extension] = (),
    claims: Sequence[SettingClaim] = (),
    ready: asyncio.Event | None = None,
    tune_collector: bool = False,
    stopping: Sequence[Callable[[], Awaitable[None]]] = (),
) -> int:
    """Run until SIGTERM/SIGINT; returns the process exit status. A failed start raises
    (`UsageError` for a bad setting, another `OperationalError` for what else stops it).
    `tune_collector`: the process only serves (`rebalance serve`): set up the garbage
    collector for it once started (`coordinator.node.collector`). `stopping`: awaited on
    SIGTERM before the server drains its connections (cluster mode hands its partitions over
    there, so parked requests are answered NOT_COORDINATOR at once and peers take over)."""
    config_file = getattr(args, "config", None)
    from_file = read_properties(config_file) if config_file is not None else {}
    settings = [f"{key}={value}" for key, value in from_file.items()] + list(args.settings)
    if getattr(args, "node_id", None) is not None:
        if any(s.split("=", 1)[0].strip() in ("node.id", "broker.id") for s in settings):
            raise UsageError("--node-id and the node.id setting both name the node; give one")
        settings.append(f"node.id={args.node_id}")
    if getattr(args, "advertise", None) is not None:
        host, port = args.advertise
        settings += [f"advertised.host.name={host}", f"advertised.port={port}"]
    try:
        config = parse_settings(settings, claims=claims)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    _refuse_conflicts(args, config)
    from coordinator.node.app import ServerApp

    data_dir = _data_dir(args.data_dir, config)
    app = ServerApp(config, data_dir, topics=args.topic, extensions=extensions)
    host, port = args.bind if args.bind is not None else DEFAULT_BIND
    await app.start(host, port)
    trimmer = tune_for_serving() if tune_collector else None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
        logger.info("shutting down")
        for hook in stopping:
            await hook()
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        if trimmer is not None:
            trimmer.stop()
        await app.stop()
    logger.info("stopped")
    return 0


def _refuse_conflicts(args: argparse.Namespace, config: ServerConfig) -> None:
    """Options that would each say the same thing otherwise, the one silently winning."""
    if args.bind is not None and config.listeners is not None:
        raise UsageError(
            "--bind and the listeners setting both say where to listen; give one of them"
        )
    if getattr(args, "advertise", None) is not None and config.advertised_listeners is not None:
        raise UsageError(
            "--advertise and the advertised.listeners setting both say what clients are told; "
            "give one of them"
        )


def _data_dir(option: Path | None, config: ServerConfig) -> Path:
    """`--data-dir`, else `log.dirs` (else `log.dir`) of the settings: one directory."""
    setting, text = (
        ("log.dirs", config.log_dirs)
        if config.log_dirs is not None
        else ("log.dir", config.log_dir)
    )
    dirs = [part.strip() for part in (text or "").split(",") if part.strip()]
    if len(dirs) > 1:  # DIFFERS: Kafka spreads partitions over several log dirs (JBOD)
        raise UsageError(f"{setting} names {len(dirs)} directories; this node keeps one")
    if option is None:
        if not dirs:
            raise UsageError("give --data-dir DIR (or log.dirs in the settings)")
        return Path(dirs[0])
    if dirs and Path(dirs[0]).resolve() != option.resolve():
        raise UsageError(
            f"--data-dir {option} and {setting}={dirs[0]} name different directories; give one"
        )
    return option


def configure_logging(level: str, log_format: str = "text") -> None:
    """Stderr logging: text lines, or one JSON object a line (`coordinator.cli.log_format`)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter()
        if log_format == "json"
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    logging.basicConfig(level=level, handlers=[handler])


def serve_main(
    args: argparse.Namespace,
    *,
    extensions: Sequence[Extension] = (),
    claims: Sequence[SettingClaim] = (),
    stopping: Sequence[Callable[[], Awaitable[None]]] = (),
) -> int:
    """Synchronous entry for the console script: one line and an exit status on failure."""
    configure_logging(args.log_level, args.log_format)
    return run_command(
        "rebalance serve",
        args.debug,
        lambda: asyncio.run(
            run_serve(
                args, extensions=extensions, claims=claims, tune_collector=True, stopping=stopping
            )
        ),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m coordinator.cli.serve ...` (same options as `rebalance serve`)."""
    parser = OneLineParser(prog="rebalance serve", description=__doc__.splitlines()[0])
    add_serve_arguments(parser)
    return serve_main(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
