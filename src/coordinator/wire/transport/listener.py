"""The listening socket, bound before anything else is opened, and the address clients are given.

A node binds its port first (right after locking its data dir), so that an address already in
use ends the start before a store or a writer process exists: a failed start leaves nothing
behind. The socket listens at once; clients that connect while the stores load wait in the
backlog instead of being refused.

Clients connect to the address a node advertises in Metadata and FindCoordinator, not the one it
bound (Kafka's `advertised.listeners`). A wildcard bind (0.0.0.0, ::) is no address a client can
reach, so without an explicit one the machine's host name is advertised, as Kafka does.
"""

from __future__ import annotations

import errno
import ipaddress
import socket

from coordinator.errors import OperationalError

BACKLOG = 1024


def bind_listener(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: any free port); `OperationalError` if the
    address is in use, not this machine's, or not allowed."""
    where = f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise OperationalError(
            f"cannot listen on {where}: {exc.strerror}; bind to an address of this machine"
        ) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # restart past TIME_WAIT
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        raise OperationalError(f"cannot listen on {where}: {_why(exc)}") from None
    return sock


def _why(exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return "the address is already in use (another server?); stop it, or choose another port"
    if exc.errno == errno.EADDRNOTAVAIL:
        return "not an address of this machine; bind to one of its addresses, or 0.0.0.0"
    if exc.errno == errno.EACCES:
        return "permission denied (ports below 1024 need privileges); choose a higher port"
    return f"{exc.strerror}"


def is_wildcard(host: str) -> bool:
    """0.0.0.0, :: or empty: every address of the machine, none a client can connect to."""
    if not host:
        return True
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def advertisable_host(bound_host: str) -> str:
    """What to tell clients when no address is configured: the bound host, or for a wildcard
    bind the machine's host name."""
    return socket.gethostname() if is_wildcard(bound_host) else bound_host
