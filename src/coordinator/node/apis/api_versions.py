"""ApiVersions (key 18): the list of every registered API and its advertised versions.

Versions: v1 added throttle_time; v3 (flexible) added client_software_name/version in the request
and tagged feature fields in the response; v4 only changed client retry rules. Every response
version uses response header v0 (kio's `__header_schema__` handles it).

aiokafka always sends v0, kafka-python v4, librdkafka v3 (and falls back to v0). A request above
our maximum is answered by `answer_unsupported_version`: a v0-format body with
UNSUPPORTED_VERSION and the full list (KIP-511), from which clients pick a version they share.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from coordinator.node.contract import ApiRegistry, RequestContext, ResponseValue
from coordinator.wire.codec import EncodedBody, build_response, encode_body

API_KEY = 18
VERSIONS = range(0, 5)


def advertised(registry: ApiRegistry) -> list[dict[str, int]]:
    return [
        {"api_key": spec.api_key, "min_version": spec.versions[0], "max_version": spec.versions[-1]}
        for spec in registry
    ]


async def handle(request: Any, api_version: int, ctx: RequestContext) -> ResponseValue:
    # Every connection opens with ApiVersions and the answer only changes when an API is
    # registered, so the encoded body is cached by the registry.
    registry = ctx.broker.registry

    def build() -> EncodedBody:
        values = {
            "error_code": ErrorCode.none,
            "api_keys": advertised(registry),
            "throttle_time": 0,
        }
        return encode_body(build_response(API_KEY, api_version, values))

    return registry.derived(("api_versions", api_version), build)


def answer_unsupported_version(registry: ApiRegistry) -> ResponsePayload:
    """The KIP-511 answer to an ApiVersions request of a version we do not speak."""
    return build_response(
        API_KEY,
        0,
        {"error_code": ErrorCode.unsupported_version, "api_keys": advertised(registry)},
    )
