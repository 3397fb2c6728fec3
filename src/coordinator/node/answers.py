"""Which bytes answer a request: a handler's value encoded for the request's version, or the
error answer for a handler that failed (KAFKA_STORAGE_ERROR for a storage failure,
UNKNOWN_SERVER_ERROR for any other, where the response has a top-level error code; otherwise
none, and the connection is closed). No sockets here: `coordinator.node.connection` writes what
these return.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from coordinator.errors import StoreError
from coordinator.wire.codec import (
    EncodedBody,
    RequestPrefix,
    build_response,
    encode_response,
    encode_values,
    response_class,
)

logger = logging.getLogger("coordinator.wire")


def encode_answer(
    value: Mapping[str, Any] | ResponsePayload | EncodedBody, prefix: RequestPrefix
) -> bytes:
    if isinstance(value, dict):  # the usual answer: written straight from the dict
        return encode_values(prefix.api_key, prefix.api_version, value, prefix.correlation_id)
    if isinstance(value, EncodedBody):  # a reused answer (heartbeats), before the ABC check
        return encode_response(check_response(value, prefix), prefix.correlation_id)
    response = (
        build_response(prefix.api_key, prefix.api_version, value)
        if isinstance(value, Mapping)
        else value
    )
    return encode_response(check_response(response, prefix), prefix.correlation_id)


def unknown_server_error(prefix: RequestPrefix) -> bytes | None:
    """An UNKNOWN_SERVER_ERROR answer, for APIs whose response has a top-level error code.

    Other responses carry errors only per topic/partition; an empty one would read as success,
    so for those the connection is closed instead.
    """
    return error_answer(prefix, ErrorCode.unknown_server_error)


def storage_error(prefix: RequestPrefix) -> bytes | None:
    """A KAFKA_STORAGE_ERROR answer, for APIs whose response has a top-level error code."""
    return error_answer(prefix, ErrorCode.kafka_storage_error)


def error_answer(prefix: RequestPrefix, code: ErrorCode) -> bytes | None:
    fields = {
        f.name for f in dataclasses.fields(response_class(prefix.api_key, prefix.api_version))
    }
    if "error_code" not in fields:
        return None
    return encode_answer({"error_code": code}, prefix)


def check_response(
    response: ResponsePayload | EncodedBody, prefix: RequestPrefix
) -> ResponsePayload | EncodedBody:
    kind = response.response_type if isinstance(response, EncodedBody) else type(response)
    if kind.__api_key__ != prefix.api_key or kind.__version__ != prefix.api_version:
        raise TypeError(
            f"handler returned {kind.__qualname__} v{kind.__version__} for "
            f"api_key {prefix.api_key} v{prefix.api_version}"
        )
    return response


def failure_answer(name: str, prefix: RequestPrefix, exc: Exception) -> bytes | None:
    """Log a request's failure; the error answer to send, or None: close the connection.

    A storage failure (disk full, I/O error) the handler did not answer itself is one line,
    no traceback (a full disk fails every write), and Kafka's code for it; any other
    failure is logged with its traceback and answered UNKNOWN_SERVER_ERROR."""
    if isinstance(exc, OSError | StoreError):
        data = storage_error(prefix)
        logger.warning(
            "%s: api_key %d v%d failed to store (correlation id %d): %s; %s",
            name,
            prefix.api_key,
            prefix.api_version,
            prefix.correlation_id,
            exc,
            "answering KAFKA_STORAGE_ERROR" if data else "closing connection",
        )
        return data
    data = unknown_server_error(prefix)
    logger.error(
        "%s: handler for api_key %d v%d failed (correlation id %d); %s",
        name,
        prefix.api_key,
        prefix.api_version,
        prefix.correlation_id,
        "answering UNKNOWN_SERVER_ERROR" if data else "closing connection",
        exc_info=exc,
    )
    return data
