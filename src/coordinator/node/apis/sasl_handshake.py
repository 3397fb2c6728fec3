"""SaslHandshake (key 17): the client names its SASL mechanism (see
`coordinator.wire.security.sasl`).

Only v1 is offered: after a v0 handshake Kafka < 1.0 clients sent their tokens unframed, which
this server does not read (every client library tested sends v1). On a listener without SASL
the answer is ILLEGAL_SASL_STATE with no mechanisms, as Kafka's.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.contract import RequestContext, ResponseValue

API_KEY = 17
VERSIONS = range(1, 2)


def answer_now(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    session = ctx.session
    authority = None if session is None else session.listener.sasl
    if session is None or authority is None:
        return {"error_code": ErrorCode.illegal_sasl_state, "mechanisms": []}
    error = authority.handshake(session, request.mechanism)
    return {"error_code": error, "mechanisms": list(authority.mechanisms)}


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    return answer_now(request, api_version, ctx)
