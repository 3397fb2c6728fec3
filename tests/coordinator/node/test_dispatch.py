"""Which answer a frame gets, decided without a socket: `read_frame` picks the API and reads the
request or refuses the connection; `failure_answer` turns a failed handler into its error answer."""

from __future__ import annotations

import logging

import pytest
from kio.schema.errors import ErrorCode

from coordinator.errors import StoreError
from coordinator.node.answers import encode_answer, failure_answer
from coordinator.node.apis import builtin_registry
from coordinator.node.dispatch import CloseConnection, read_frame
from coordinator.wire.codec import (
    REQUEST_PREFIX,
    RequestPrefix,
    build_request,
    decode_response,
    encode_request,
)

REGISTRY = builtin_registry()


def frame_of(api_key: int, version: int, values: dict[str, object], correlation_id: int) -> bytes:
    """A request frame as the connection hands it over: without its length prefix."""
    return encode_request(build_request(api_key, version, values), correlation_id, "tester")[4:]


def test_a_request_is_read_with_its_api_its_prefix_and_its_client_id() -> None:
    read = read_frame(frame_of(3, 12, {"topics": None}, 41), REGISTRY, None)
    assert not isinstance(read, bytes)
    spec, prefix, client_id, body = read
    assert (spec.api_key, prefix, client_id) == (3, RequestPrefix(3, 12, 41), "tester")
    assert body.topics is None


def test_an_unknown_api_key_closes_the_connection() -> None:
    with pytest.raises(CloseConnection, match=r"^unknown api_key 9999$"):
        read_frame(REQUEST_PREFIX.pack(9999, 0, 1), REGISTRY, None)


def test_a_version_the_node_does_not_advertise_closes_the_connection() -> None:
    with pytest.raises(CloseConnection, match=r"^unsupported version 99 of api_key 3 \(advertised"):
        read_frame(REQUEST_PREFIX.pack(3, 99, 1), REGISTRY, None)


def test_an_unsupported_api_versions_version_is_answered_in_v0_kip_511() -> None:
    answer = read_frame(REQUEST_PREFIX.pack(18, 99, 5), REGISTRY, None)
    assert isinstance(answer, bytes)
    correlation_id, response = decode_response(answer[4:], 18, 0)
    assert correlation_id == 5
    assert response.error_code == ErrorCode.unsupported_version
    assert {key.api_key for key in response.api_keys} >= {3, 18}


def test_a_body_kio_cannot_read_closes_the_connection() -> None:
    frame = frame_of(3, 12, {"topics": None}, 2)
    with pytest.raises(CloseConnection):
        read_frame(frame[: REQUEST_PREFIX.size + 3], REGISTRY, None)


def test_a_failed_handler_is_answered_unknown_server_error_where_the_response_can_say_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    prefix = RequestPrefix(18, 3, 7)  # ApiVersions: a top-level error code
    with caplog.at_level(logging.ERROR, logger="coordinator.wire"):
        answer = failure_answer("conn#1", prefix, RuntimeError("bug"))
    assert answer == encode_answer({"error_code": ErrorCode.unknown_server_error}, prefix)
    (record,) = caplog.records
    assert record.exc_info is not None and "answering UNKNOWN_SERVER_ERROR" in record.message


def test_a_storage_failure_is_answered_kafka_storage_error_in_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    prefix = RequestPrefix(18, 3, 8)
    with caplog.at_level(logging.WARNING, logger="coordinator.wire"):
        answer = failure_answer("conn#1", prefix, StoreError("groups.sqlite: disk full"))
    assert answer == encode_answer({"error_code": ErrorCode.kafka_storage_error}, prefix)
    (record,) = caplog.records
    assert record.exc_info is None and "disk full" in record.message


def test_a_failure_of_an_api_without_a_top_level_error_code_closes_the_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="coordinator.wire"):
        answer = failure_answer("conn#1", RequestPrefix(3, 12, 9), RuntimeError("bug"))
    assert answer is None  # Metadata has errors only per topic: an empty answer reads as success
    assert "closing connection" in caplog.records[0].message
