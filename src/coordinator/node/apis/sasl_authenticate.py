"""SaslAuthenticate (key 36): one SASL token each way (see `coordinator.wire.security.sasl`).

v1 added the session lifetime (KIP-368: `connections.max.reauth.ms`, 0 when sessions do not
end); v2 is flexible. A failure is answered with its error code and message, and the connection
is closed once the answer is written. On a listener without SASL: ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.contract import RequestContext, ResponseValue

API_KEY = 36
VERSIONS = range(0, 3)


def answer_now(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    session = ctx.session
    authority = None if session is None else session.listener.sasl
    if session is None or authority is None:
        return {
            "error_code": ErrorCode.illegal_sasl_state,
            "error_message": "this listener does not use SASL",
            "auth_bytes": b"",
            "session_lifetime": timedelta(0),
        }
    answer = authority.authenticate(session, request.auth_bytes)
    return {
        "error_code": answer.error_code,
        "error_message": answer.error_message,
        "auth_bytes": answer.auth_bytes,
        "session_lifetime": timedelta(milliseconds=answer.session_lifetime_ms),
    }


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    return answer_now(request, api_version, ctx)
