"""Kafka's listener settings: `listeners`, `advertised.listeners`, `listener.security.protocol.map`.

A listener is `NAME://HOST:PORT`. Its security protocol is the one `listener.security.protocol.map`
gives its name (`NAME:PROTOCOL,...`); by default each of Kafka's four protocol names maps to
itself, so `SSL://0.0.0.0:9093` is an SSL listener and a listener named anything else needs an
entry in the map, as in Kafka. An empty host binds every interface; port 0 picks a free port
(convenient for tests; clients are then told the bound port).

`advertised.listeners` names, per listener, the address clients are told in Metadata,
FindCoordinator and DescribeCluster when they are connected to that listener; a listener it does
not name advertises its own address (the machine's host name for a wildcard bind, as Kafka does).
Kafka requires every advertised name to be a listener and refuses a wildcard advertised host;
so does this module.

The parsers raise `ValueError` with a one-line message; the settings model turns it into a
startup error naming the setting.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from coordinator.wire.transport.listener import is_wildcard

SECURITY_PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

_LISTENER: Final = re.compile(r"^([A-Za-z0-9_-]+)://(\[[0-9A-Fa-f:.]*\]|[^:\[\]]*):(\d+)$")
_NAME: Final = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One `NAME://HOST:PORT` entry (names upper-cased, as Kafka compares them)."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class ListenerPlan:
    """A listener to open: where it binds, its protocol, what it advertises (None: derived
    from the bound address once it is known)."""

    endpoint: Endpoint
    protocol: str
    advertised: Endpoint | None

    @property
    def name(self) -> str:
        return self.endpoint.name

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def parse_endpoints(text: str, setting: str) -> list[Endpoint]:
    """A comma-separated list of `NAME://HOST:PORT`; names and ports must not repeat."""
    endpoints = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        match = _LISTENER.match(item)
        if match is None:
            raise ValueError(f"{item!r} is not NAME://HOST:PORT (e.g. SSL://0.0.0.0:9093)")
        name, host, port_text = match.groups()
        port = int(port_text)
        if port > 65535:
            raise ValueError(f"{item!r}: port {port} is not in 0-65535")
        endpoints.append(Endpoint(name.upper(), host.strip("[]"), port))
    if not endpoints:
        raise ValueError(f"{setting} names no listener")
    names = [e.name for e in endpoints]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"listener name {repeated[0]} appears more than once")
    ports = [e.port for e in endpoints if e.port != 0]
    twice = sorted({p for p in ports if ports.count(p) > 1})
    if twice and setting == "listeners":
        raise ValueError(f"port {twice[0]} is used by more than one listener")
    return endpoints


def parse_protocol_map(text: str) -> dict[str, str]:
    """`NAME:PROTOCOL,...` over the default map (each protocol name maps to itself)."""
    mapping = {p: p for p in SECURITY_PROTOCOLS}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not _NAME.match(name):
            raise ValueError(f"{item!r} is not LISTENER_NAME:SECURITY_PROTOCOL")
        if protocol not in SECURITY_PROTOCOLS:
            raise ValueError(
                f"{item!r}: security protocol {protocol} is not one of "
                f"{', '.join(SECURITY_PROTOCOLS)}"
            )
        mapping[name] = protocol
    return mapping


def plan_listeners(
    listeners: Sequence[Endpoint],
    advertised: Sequence[Endpoint],
    protocol_map: Mapping[str, str],
) -> list[ListenerPlan]:
    """Pair each listener with its protocol and advertised address; `ValueError` if a name has
    no protocol or an advertised name is no listener."""
    names = {e.name for e in listeners}
    by_name = {e.name: e for e in advertised}
    for endpoint in advertised:
        if endpoint.name not in names:
            raise ValueError(
                f"advertised.listeners names {endpoint.name}, which is not in listeners "
                f"({', '.join(sorted(names))})"
            )
        if is_wildcard(endpoint.host):
            raise ValueError(
                f"advertised.listeners: {endpoint} is not an address clients can connect to; "
                "give a host name or address"
            )
    plans = []
    for endpoint in listeners:
        protocol = protocol_map.get(endpoint.name)
        if protocol is None:
            raise ValueError(
                f"listener {endpoint.name} has no security protocol: add "
                f"{endpoint.name}:PROTOCOL to listener.security.protocol.map"
            )
        plans.append(ListenerPlan(endpoint, protocol, by_name.get(endpoint.name)))
    return plans
