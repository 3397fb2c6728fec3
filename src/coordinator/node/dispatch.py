"""Which API answers a frame, and whether the connection may ask it: the first step of every
request, with no socket (`coordinator.node.connection` acts on what it returns).

`read_frame` reads a frame's fixed prefix, checks the session's SASL gate, finds the API in the
node's registry and the version among those it advertises, and decodes the request with kio.
It returns the answer at once for an unsupported ApiVersions version (KIP-511), and raises
`CloseConnection`, with the reason the connection's log line gives, for a request the node must
not answer: refused by the SASL gate, an unknown API key, an unadvertised version of another
API, or a body kio cannot decode.
"""

from __future__ import annotations

import time
from typing import Any

from coordinator.node.contract import ApiRegistry, ApiSpec
from coordinator.wire.codec import (
    REQUEST_PREFIX,
    FrameError,
    RequestPrefix,
    encode_response,
    read_request,
)
from coordinator.wire.security.sasl import refusal
from coordinator.wire.security.session import Session


class CloseConnection(Exception):
    """Raised while handling a frame to end its connection after logging why."""


def read_frame(
    frame: bytes, registry: ApiRegistry, session: Session | None
) -> tuple[ApiSpec, RequestPrefix, str | None, Any] | bytes:
    """The API, prefix, client id and request of `frame`, or the bytes answering it now."""
    api_key, api_version, correlation_id = REQUEST_PREFIX.unpack_from(frame, 0)
    if session is not None and session.gated:
        refused = refusal(session, api_key, time.monotonic())
        if refused is not None:
            raise CloseConnection(refused)
    spec = registry.get(api_key)
    if spec is None:
        raise CloseConnection(f"unknown api_key {api_key}")
    prefix = RequestPrefix(api_key, api_version, correlation_id)
    if api_version not in spec.versions:
        if spec.answer_unsupported_version is None:
            raise CloseConnection(
                f"unsupported version {api_version} of api_key {api_key} "
                f"(advertised {spec.versions.start}-{spec.versions.stop - 1})"
            )
        return encode_response(spec.answer_unsupported_version(registry), correlation_id)
    try:
        client_id, body = read_request(frame, prefix)
    except FrameError as exc:
        raise CloseConnection(str(exc)) from None
    return spec, prefix, client_id, body
