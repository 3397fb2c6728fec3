"""Binding every configured listener at start, before any store opens.

Without `listeners` the node has one PLAINTEXT listener on `--bind` whose advertised address
follows `--advertise` (`advertised.host.name`/`advertised.port`): the wire server decides it
(`ServedListener` None). With `listeners`, each is bound in the order given (the first is the
node's main address), its TLS context built from the `ssl.*` settings if it is SSL or SASL_SSL,
and its advertised address taken from `advertised.listeners` (port 0 there, or no entry: the
bound port). Everything that can be wrong with the settings is found here, before a socket is
bound or a file opened: a TLS store that cannot be read, a listener without a protocol, an
advertised name that is no listener. A failure closes the sockets already bound.
"""

from __future__ import annotations

import logging
import socket
import ssl

from coordinator.errors import UsageError
from coordinator.node.config import ServerConfig
from coordinator.wire.security.session import ServedListener
from coordinator.wire.security.tls import parse_protocols, server_context
from coordinator.wire.transport.endpoints import (
    Endpoint,
    ListenerPlan,
    parse_endpoints,
    parse_protocol_map,
    plan_listeners,
)
from coordinator.wire.transport.listener import advertisable_host, bind_listener

logger = logging.getLogger("coordinator.wire")

Opened = list[tuple[socket.socket, ServedListener | None]]


def listener_plans(config: ServerConfig, bind: tuple[str, int]) -> list[ListenerPlan] | None:
    """The listeners to open; None for the single `--bind` listener of old."""
    if config.listeners is None and config.advertised_listeners is None:
        return None
    # A KRaft controller's listeners (combined-mode properties name them) are not opened.
    controllers = {n.strip().upper() for n in config.controller_listener_names.split(",")}
    if config.listeners is not None:
        listeners = [
            e for e in parse_endpoints(config.listeners, "listeners") if e.name not in controllers
        ]
        if not listeners:
            raise UsageError("listeners names only controller listeners; name one for clients")
        for name in sorted(controllers & {e.name for e in parse_endpoints(config.listeners, "")}):
            logger.warning(
                "listener %s is a KRaft controller's (controller.listener.names): not opened, "
                "this node has no controller quorum",
                name,
            )
    else:
        listeners = [Endpoint("PLAINTEXT", *bind)]
    advertised = (
        [
            e
            for e in parse_endpoints(config.advertised_listeners, "advertised.listeners")
            if e.name not in controllers
        ]
        if config.advertised_listeners is not None
        else []
    )
    protocols = parse_protocol_map(config.listener_security_protocol_map or "")
    try:
        return plan_listeners(listeners, advertised, protocols)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def open_listeners(config: ServerConfig, bind: tuple[str, int]) -> Opened:
    """Bind every listener (see the module docstring); `OperationalError` with one line."""
    plans = listener_plans(config, bind)
    if plans is None:
        return [(bind_listener(*bind), None)]
    tls = _tls_context(config) if any(plan.uses_tls for plan in plans) else None
    opened: Opened = []
    try:
        for plan in plans:
            sock = bind_listener(plan.endpoint.host, plan.endpoint.port)
            opened.append((sock, _served(plan, sock, tls if plan.uses_tls else None)))
    except BaseException:
        for sock, _ in opened:
            sock.close()
        raise
    return opened


def _served(plan: ListenerPlan, sock: socket.socket, tls: ssl.SSLContext | None) -> ServedListener:
    bound_host, bound_port = sock.getsockname()[:2]
    if plan.advertised is not None:
        advertised = (plan.advertised.host, plan.advertised.port or bound_port)
    else:
        advertised = (advertisable_host(bound_host), bound_port)
    return ServedListener(plan.name, plan.protocol, (bound_host, bound_port), advertised, tls)


def _tls_context(config: ServerConfig) -> ssl.SSLContext:
    password = config.ssl_key_password
    return server_context(
        keystore=config.ssl_keystore_location,
        key_password=password.get_secret_value() if password is not None else None,
        truststore=config.ssl_truststore_location,
        client_auth=config.ssl_client_auth,
        protocols=parse_protocols(config.ssl_enabled_protocols),
    )
