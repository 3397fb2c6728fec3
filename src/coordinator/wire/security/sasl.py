"""SASL on SASL_PLAINTEXT and SASL_SSL listeners: the mechanisms, the exchange, the gate.

A connection to a SASL listener starts unauthenticated. Until SaslAuthenticate succeeds, only
ApiVersions, SaslHandshake and SaslAuthenticate are answered; any other request closes the
connection, as Kafka does. SaslHandshake picks the mechanism (`sasl.enabled.mechanisms`; an
unknown one gets UNSUPPORTED_SASL_MECHANISM and the list); SaslAuthenticate carries the tokens:
one for PLAIN (`authzid NUL user NUL password`), two for SCRAM-SHA-256/512
(`coordinator.wire.security.scram`). Credentials come from `DATA_DIR/credentials.sqlite`
(`coordinator.wire.security.credentials`), PLAIN included. The principal is `User:<name>`.

Bad credentials (or a malformed token, or a SaslAuthenticate without a handshake) are answered
with SASL_AUTHENTICATION_FAILED (ILLEGAL_SASL_STATE for the last); the connection then takes no
further request and is closed `connection.failed.authentication.delay.ms` (100) later, as in
Kafka: it slows down password guessing, and clients read the answer before they see the close.
Failures are logged once per client address and `FAILURE_LOG_SECONDS` window, with the count of
the ones not logged, so a client retrying in a loop cannot flood the log.

Re-authentication (KIP-368): with `connections.max.reauth.ms` > 0, SaslAuthenticate v1+ tells
the client its session lifetime; a client re-authenticates on the same connection before it
ends (same mechanism and principal, as Kafka requires), and a connection whose session has
ended is closed at its next request other than SaslHandshake/SaslAuthenticate.

Deliberately different from Kafka: SaslHandshake v0, after which Kafka < 1.0 clients sent
their tokens unframed, is not offered (aiokafka, kafka-python and librdkafka all send v1 and
SaslAuthenticate); no GSSAPI or OAUTHBEARER; the default `sasl.enabled.mechanisms` is the
SCRAM pair (Kafka's is GSSAPI); PLAIN checks the SCRAM credentials instead of a JAAS file.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from kio.schema.errors import ErrorCode

from coordinator.wire.security.credentials import CredentialStore
from coordinator.wire.security.scram import MECHANISMS, ScramError, ScramExchange, password_matches
from coordinator.wire.security.session import Authenticated, Session

logger = logging.getLogger("coordinator.wire.sasl")

SUPPORTED_MECHANISMS: Final = ("PLAIN", *MECHANISMS)
DEFAULT_MECHANISMS: Final = "SCRAM-SHA-256,SCRAM-SHA-512"
API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
BEFORE_AUTHENTICATION: Final = frozenset({API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE})
REAUTHENTICATION: Final = frozenset({SASL_HANDSHAKE, SASL_AUTHENTICATE})
FAILURE_LOG_SECONDS: Final = 60.0

_PLAIN_FAILED: Final = "Authentication failed: Invalid username or password"


def parse_mechanisms(text: str) -> tuple[str, ...]:
    """`sasl.enabled.mechanisms`; `ValueError` naming one this server does not have."""
    names = tuple(part.strip().upper() for part in text.split(",") if part.strip())
    if not names:
        raise ValueError(f"names no mechanism (use some of {', '.join(SUPPORTED_MECHANISMS)})")
    for name in names:
        if name not in SUPPORTED_MECHANISMS:
            raise ValueError(f"{name} is not supported ({', '.join(SUPPORTED_MECHANISMS)} are)")
    return names


@dataclass(eq=False, slots=True)
class _Exchange:
    """A connection's SASL exchange after its handshake."""

    mechanism: str
    scram: ScramExchange | None = None
    steps: int = 0


@dataclass(eq=False)
class FailureLog:
    """Logs an authentication failure once per client address and window (see module doc)."""

    window: float = FAILURE_LOG_SECONDS
    clock: Callable[[], float] = time.monotonic
    _since: dict[str, tuple[float, int]] = field(default_factory=dict)

    def failed(self, client_host: str, principal: str, mechanism: str, why: str) -> bool:
        """Record a failure; returns True if it was logged."""
        now = self.clock()
        started, suppressed = self._since.get(client_host, (-self.window, 0))
        if now - started < self.window:
            self._since[client_host] = (started, suppressed + 1)
            return False
        if len(self._since) > 10_000:  # a flood from many addresses: forget the quiet ones
            self._since = {h: v for h, v in self._since.items() if now - v[0] < self.window}
        self._since[client_host] = (now, 0)
        more = f" ({suppressed} more failures from there not logged)" if suppressed else ""
        logger.warning(
            "authentication failed from %s (%s, %s): %s%s",
            client_host, principal, mechanism, why, more,
        )  # fmt: skip
        return True


class SaslAuthority:
    """A node's SASL side: enabled mechanisms, credentials, session lifetime, failure log."""

    def __init__(
        self,
        mechanisms: Sequence[str],
        credentials: CredentialStore,
        *,
        reauth_ms: int = 0,
        failure_delay_ms: int = 100,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.mechanisms = tuple(mechanisms)
        self.failure_delay_ms = failure_delay_ms
        self.credentials = credentials
        self.reauth_ms = reauth_ms
        self.clock = clock
        self.failures = FailureLog(clock=clock)
        #: Successful re-authentications (KIP-368) so far, for tests and operators.
        self.reauthentications = 0

    def handshake(self, session: Session, mechanism: str) -> ErrorCode:
        if mechanism not in self.mechanisms:
            return ErrorCode.unsupported_sasl_mechanism
        if session.authenticated and mechanism != session.mechanism:
            # KIP-368: a re-authentication keeps the mechanism; Kafka refuses a change.
            return ErrorCode.illegal_sasl_state
        session.exchange = _Exchange(mechanism)
        return ErrorCode.none

    def authenticate(self, session: Session, token: bytes) -> Authenticated:
        exchange = session.exchange
        if not isinstance(exchange, _Exchange):
            return self._refuse(
                session, ErrorCode.illegal_sasl_state, "SaslAuthenticate before SaslHandshake",
                "SaslAuthenticate before SaslHandshake", "?",
            )  # fmt: skip
        exchange.steps += 1
        if exchange.mechanism == "PLAIN":
            return self._plain(session, exchange, token)
        return self._scram(session, exchange, token)

    def _plain(self, session: Session, exchange: _Exchange, token: bytes) -> Authenticated:
        parts = token.split(b"\0")
        if len(parts) != 3:
            return self._failed(session, "PLAIN", _PLAIN_FAILED, "malformed PLAIN token", "?")
        authzid, user, password = (part.decode(errors="replace") for part in parts)
        if authzid and authzid != user:
            return self._failed(session, "PLAIN", _PLAIN_FAILED,
                                f"authorization id {authzid!r} is not the user", user)  # fmt: skip
        for mechanism in MECHANISMS:
            credential = self.credentials.credential(user, mechanism)
            if credential is not None and password_matches(mechanism, credential, password):
                return self._succeeded(session, exchange, user)
        return self._failed(session, "PLAIN", _PLAIN_FAILED, "unknown user or wrong password", user)

    def _scram(self, session: Session, exchange: _Exchange, token: bytes) -> Authenticated:
        mechanism = exchange.mechanism
        message = (
            "Authentication failed during authentication due to invalid credentials with SASL "
            f"mechanism {mechanism}"
        )
        try:
            if exchange.scram is None:
                exchange.scram = ScramExchange(
                    mechanism, lambda user: self.credentials.credential(user, mechanism)
                )
                return Authenticated(ErrorCode.none, None, exchange.scram.first(token))
            final = exchange.scram.final(token)
        except ScramError as exc:
            user = exchange.scram.user if exchange.scram is not None else None
            return self._failed(session, mechanism, message, str(exc), user or "?")
        assert exchange.scram.user is not None
        answer = self._succeeded(session, exchange, exchange.scram.user)
        if answer.error_code is not ErrorCode.none:
            return answer
        return Authenticated(ErrorCode.none, None, final, answer.session_lifetime_ms)

    def _succeeded(self, session: Session, exchange: _Exchange, user: str) -> Authenticated:
        principal = f"User:{user}"
        if session.authenticated and principal != session.principal:
            return self._failed(
                session, exchange.mechanism, "Cannot change principals during re-authentication",
                f"re-authentication as {principal} on a connection of {session.principal}", user,
            )  # fmt: skip
        if session.authenticated:
            self.reauthentications += 1
        session.exchange = None
        session.authenticated = True
        session.principal = principal
        session.mechanism = exchange.mechanism
        if self.reauth_ms > 0:
            session.expires_at = self.clock() + self.reauth_ms / 1000
        session.gated = session.expires_at is not None
        return Authenticated(ErrorCode.none, session_lifetime_ms=self.reauth_ms)

    def _failed(
        self, session: Session, mechanism: str, message: str, why: str, user: str
    ) -> Authenticated:
        return self._refuse(session, ErrorCode.sasl_authentication_failed, message, why, user,
                            mechanism)  # fmt: skip

    def _refuse(
        self,
        session: Session,
        code: ErrorCode,
        message: str,
        why: str,
        user: str,
        mechanism: str = "?",
    ) -> Authenticated:
        session.exchange = None
        session.close_after_answer = self.failure_delay_ms / 1000
        self.failures.failed(session.client_host, f"User:{user}", mechanism, why)
        return Authenticated(code, message)


def refusal(session: Session, api_key: int, now: float) -> str | None:
    """Why a request may not be answered on this connection (it is then closed), or None.

    Asked by the wire server only for a connection that is gated: not authenticated yet, or
    authenticated for a limited session (KIP-368)."""
    if not session.authenticated:
        if api_key in BEFORE_AUTHENTICATION:
            return None
        return (
            f"api_key {api_key} before SASL authentication (only ApiVersions, SaslHandshake "
            "and SaslAuthenticate are answered until then)"
        )
    if (
        session.expires_at is not None
        and now >= session.expires_at
        and (api_key not in REAUTHENTICATION)
    ):
        return "SASL session expired without re-authentication (connections.max.reauth.ms)"
    return None
