"""SaslHandshake (key 17): the client names its SASL mechanism (see
`coordinator.wire.security.sasl`).

Only v1 is offered: after a v0 handshake Kafka < 1.0 clients sent their tokens unframed, which
this server does not read (every client library tested sends v1). On a listener without SASL
the answer is ILLEGAL_SASL_STATE with no mechanisms, as Kafka's.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from coordinator.node.authorization import Exempt
from coordinator.node.contract import RequestContext, ResponseValue
from coordinator.wire.api_keys import ApiKey

API_KEY = ApiKey.SASL_HANDSHAKE
VERSIONS = range(1, 2)

AUTHORIZATION = Exempt("authentication itself: answered before there is a principal")


def answer_now(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    session = ctx.session
    authority = None if session is None else session.listener.sasl
    if session is None or authority is None:
        return {"error_code": ErrorCode.illegal_sasl_state, "mechanisms": []}
    error = authority.handshake(session, request.mechanism)
    return {"error_code": error, "mechanisms": list(authority.mechanisms)}


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    return answer_now(request, api_version, ctx)
