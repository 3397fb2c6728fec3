"""The kio glue: frames, the fixed request prefix, and version-agnostic response building.

Golden bytes below are written out by hand from the Kafka protocol layout (header, then body;
flexible versions use compact arrays/strings and tagged-field bytes), so they check both our
per-version translation and kio's encoding choices (e.g. ApiVersions always uses header v0).
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from kio.schema.errors import ErrorCode

from coordinator.wire.codec import (
    FrameError,
    build_entity,
    build_request,
    build_response,
    decode_request,
    decode_response,
    encode_body,
    encode_request,
    encode_response,
    kio_versions,
    read_frame_length,
    read_prefix,
    response_class,
)

API_VERSIONS, METADATA, FIND_COORDINATOR, JOIN_GROUP = 18, 3, 10, 11


def golden(hex_text: str) -> bytes:
    return bytes.fromhex("".join(hex_text.split()))


def test_api_versions_v0_golden() -> None:
    response = build_response(
        API_VERSIONS,
        0,
        {"error_code": 0, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]},
    )
    assert encode_response(response, correlation_id=7) == golden(
        "00000010 00000007  0000 00000001 0012 0000 0004"
    )


def test_api_versions_v3_golden_uses_header_v0_and_compact_body() -> None:
    response = build_response(
        API_VERSIONS,
        3,
        {
            "error_code": ErrorCode.none,
            "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}],
            "throttle_time": 0,
        },
    )
    assert encode_response(response, correlation_id=7) == golden(
        "00000013 00000007  0000 02 0012 0000 0004 00 00000000 00"
    )


def test_find_coordinator_v0_golden() -> None:
    values = {"error_code": 0, "error_message": "dropped in v0", "node_id": 1, "host": "h"}
    response = build_response(FIND_COORDINATOR, 0, {**values, "port": 9092})
    assert encode_response(response, correlation_id=1) == golden(
        "00000011 00000001  0000 00000001 0001 68 00002384"
    )


def test_find_coordinator_v4_golden_batched_and_flexible() -> None:
    coordinator = {"key": "g", "node_id": 1, "host": "h", "port": 9092, "error_code": 0}
    response = build_response(
        FIND_COORDINATOR, 4, {"throttle_time": 0, "coordinators": [coordinator]}
    )
    assert encode_response(response, correlation_id=1) == golden(
        "0000001b 00000001 00  00000000 02 0267 00000001 0268 00002384 0000 00 00 00"
    )


def test_metadata_v1_golden_rack_null_and_controller() -> None:
    response = build_response(
        METADATA,
        1,
        {
            "brokers": [{"node_id": 1, "host": "h", "port": 9092}],
            "cluster_id": "absent before v2",
            "controller_id": 1,
            "topics": [],
        },
    )
    assert encode_response(response, correlation_id=2) == golden(
        "0000001d 00000002  00000001 00000001 0001 68 00002384 ffff 00000001 00000000"
    )


def test_none_becomes_empty_string_where_the_version_is_not_nullable() -> None:
    values = {
        "error_code": 0,
        "generation_id": 1,
        "protocol_type": None,
        "protocol_name": None,
        "leader": "m1",
        "member_id": "m1",
        "members": [],
    }
    v5 = build_response(JOIN_GROUP, 5, values)
    v7 = build_response(JOIN_GROUP, 7, values)
    assert v5.protocol_name == ""  # type: ignore[attr-defined]
    assert v7.protocol_name is None  # type: ignore[attr-defined]
    encode_response(v5, 1)
    encode_response(v7, 1)


def test_ints_become_error_codes_and_timedeltas_and_missing_fields_get_defaults() -> None:
    response = build_entity(
        response_class(API_VERSIONS, 3), {"error_code": 35, "throttle_time": 250}
    )
    assert response.error_code is ErrorCode.unsupported_version
    assert response.throttle_time == timedelta(milliseconds=250)
    assert response.api_keys == ()
    assert response.finalized_features_epoch == -1


def test_request_round_trip_and_trailing_bytes_are_ignored() -> None:
    request = build_request(METADATA, 13, {"topics": None, "allow_auto_topic_creation": False})
    data = encode_request(request, correlation_id=42, client_id="rdkafka")
    frame = data[4:] + b"\0\0\0"  # librdkafka pads "all topics" requests
    prefix = read_prefix(frame)
    assert (prefix.api_key, prefix.api_version, prefix.correlation_id) == (3, 13, 42)
    decoded = decode_request(frame, prefix)
    assert decoded.client_id == "rdkafka"
    assert decoded.body.topics is None  # type: ignore[attr-defined]
    assert decoded.body.allow_auto_topic_creation is False  # type: ignore[attr-defined]


def test_response_decodes_with_its_correlation_id() -> None:
    response = build_response(API_VERSIONS, 4, {"api_keys": []})
    correlation_id, decoded = decode_response(encode_response(response, 9)[4:], API_VERSIONS, 4)
    assert correlation_id == 9
    assert decoded == response


def test_garbage_body_raises_frame_error() -> None:
    frame = golden("0003 000d 00000001 ffff") + b"\xff" * 3
    with pytest.raises(FrameError, match="cannot decode api_key=3 v13"):
        decode_request(frame, read_prefix(frame))


@pytest.mark.parametrize(
    ("length", "message"),
    [(-1, "smaller than a request header"), (7, "smaller"), (1001, "socket.request.max.bytes")],
)
def test_frame_length_limits(length: int, message: str) -> None:
    with pytest.raises(FrameError, match=message):
        read_frame_length(length.to_bytes(4, "big", signed=True), max_bytes=1000)


def test_frame_length_within_limits() -> None:
    assert read_frame_length((1000).to_bytes(4, "big"), max_bytes=1000) == 1000


def test_prefix_of_a_short_frame_raises() -> None:
    with pytest.raises(FrameError, match="too short"):
        read_prefix(b"\0\x12\0")


def test_kio_versions() -> None:
    assert kio_versions(1) == range(4, 19)
    assert kio_versions(18) == range(0, 5)
    assert kio_versions(9999) == range(0)


def test_pre_encoded_body_frames_like_the_response_itself() -> None:
    response = build_response(
        API_VERSIONS, 3, {"api_keys": [{"api_key": 0, "min_version": 3, "max_version": 13}]}
    )
    assert encode_response(encode_body(response), 11) == encode_response(response, 11)


# Every API the node answers or the group coordinator will answer, in all kio versions.
SERVED_APIS = {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 22, 42, 47, 68}
ALL_RESPONSE_VERSIONS = [
    (api_key, version) for api_key in sorted(SERVED_APIS) for version in kio_versions(api_key)
]


@pytest.mark.parametrize(
    ("api_key", "version"),
    ALL_RESPONSE_VERSIONS,
    ids=[f"{k}v{v}" for k, v in ALL_RESPONSE_VERSIONS],
)
def test_every_response_version_builds_from_an_empty_dict_and_round_trips(
    api_key: int, version: int
) -> None:
    response = build_response(api_key, version, {})
    correlation_id, decoded = decode_response(encode_response(response, 3)[4:], api_key, version)
    assert (correlation_id, decoded) == (3, response)


@pytest.mark.parametrize(
    ("api_key", "version"),
    ALL_RESPONSE_VERSIONS,
    ids=[f"{k}v{v}" for k, v in ALL_RESPONSE_VERSIONS],
)
def test_none_in_every_field_encodes_in_every_version(api_key: int, version: int) -> None:
    cls = response_class(api_key, version)
    response = build_response(api_key, version, {f.name: None for f in dataclasses.fields(cls)})
    encode_response(response, 1)  # kio raises TypeError on None in a non-nullable field
    for field in dataclasses.fields(cls):
        value = getattr(response, field.name)
        assert value is not None or "None" in str(field.type), field.name
