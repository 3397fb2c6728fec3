"""What a connection carries beyond its bytes: the listener it came in on and who the client is.

A `ServedListener` is one open listener: its name, security protocol, TLS context and the
address clients connected to it are told to use (Metadata, FindCoordinator and DescribeCluster
answer with it, so a client that came in on the SSL listener is sent back to the SSL listener,
as Kafka's per-listener `advertised.listeners` do). A `Session` is one connection's security
state: its listener, the client's address and its principal. The wire server creates one per
connection and hands it to every request through `RequestContext.session`.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Protocol

from kio.schema.errors import ErrorCode

from coordinator.wire.security.tls import ANONYMOUS


@dataclass(frozen=True, slots=True)
class Authenticated:
    """SaslAuthenticate's answer."""

    error_code: ErrorCode
    error_message: str | None = None
    auth_bytes: bytes = b""
    session_lifetime_ms: int = 0


class SaslSide(Protocol):
    """What a SASL listener's requests ask of the node's SASL side
    (`coordinator.wire.security.sasl.SaslAuthority`, which imports this module)."""

    @property
    def mechanisms(self) -> tuple[str, ...]: ...

    def handshake(self, session: Session, mechanism: str) -> ErrorCode: ...

    def authenticate(self, session: Session, token: bytes) -> Authenticated: ...


@dataclass(eq=False, slots=True)
class ServedListener:
    """An open listener (see the module docstring)."""

    name: str
    protocol: str
    bound: tuple[str, int]
    advertised: tuple[str, int]
    tls: ssl.SSLContext | None = None
    #: The node's SASL side, on SASL_PLAINTEXT and SASL_SSL listeners (set at start).
    sasl: SaslSide | None = None

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


@dataclass(eq=False, slots=True)
class Session:
    """One connection's security state."""

    listener: ServedListener
    client_host: str
    principal: str = ANONYMOUS
    #: False on a SASL listener until SaslAuthenticate succeeds: until then only ApiVersions,
    #: SaslHandshake and SaslAuthenticate are answered.
    authenticated: bool = True
    #: Set by a failed authentication: the connection takes no further request and closes this
    #: many seconds after its answer (Kafka's `connection.failed.authentication.delay.ms`).
    close_after_answer: float | None = None
    #: The SASL exchange in progress (`coordinator.wire.security.sasl`), if any.
    exchange: object | None = field(default=None)
    #: The SASL mechanism the connection authenticated with.
    mechanism: str | None = None
    #: When an authenticated SASL session ends (monotonic seconds; KIP-368), if it does.
    expires_at: float | None = None
    #: Whether the wire server must ask `coordinator.wire.security.sasl.refusal` before answering:
    #: not authenticated yet, or a session that ends.
    gated: bool = False

    def __post_init__(self) -> None:
        self.gated = not self.authenticated
