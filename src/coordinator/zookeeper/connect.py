"""ZooKeeper's connect string (`HOST:PORT[,HOST:PORT...][/chroot]`) and a failed broker
registration: no kazoo import here, so the command line parses `--zookeeper` on a plain install
without the `zookeeper` extra."""

from __future__ import annotations

import argparse

from coordinator.errors import OperationalError


class BrokerRegistrationError(OperationalError):
    """The node could not register in ZooKeeper (message as 0.8 words it)."""


def parse_zookeeper_connect(text: str) -> str:
    """`HOST:PORT[,HOST:PORT...][/chroot]`, as 0.8's `zookeeper.connect`."""
    hosts, _, _chroot = text.partition("/")
    for host in hosts.split(","):
        name, sep, port = host.rpartition(":")
        if not sep or not name or not port.isdigit() or not 0 < int(port) < 65536:
            raise argparse.ArgumentTypeError(
                f"--zookeeper expects HOST:PORT[,HOST:PORT...][/chroot], got {text!r}"
            )
    return text
