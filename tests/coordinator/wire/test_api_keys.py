"""`ApiKey` names every Kafka API key as Kafka numbers it (kio's schemas are generated from
Kafka's message definitions), and the client-balance extension's keys its schemas carry."""

from __future__ import annotations

from kio.schema.index import api_key_map

from coordinator.wire import client_balance_schema as schema
from coordinator.wire.api_keys import ApiKey

EXTENSION = {
    ApiKey.CLIENT_BALANCE_HEARTBEAT,
    ApiKey.PARTITION_REGISTER,
    ApiKey.PARTITION_RELEASE,
    ApiKey.CLIENT_BALANCE_DESCRIBE,
}


def test_the_kafka_keys_are_kafkas_names_and_numbers() -> None:
    ours = {int(key): key.name.lower() for key in ApiKey if key not in EXTENSION}
    assert ours == dict(api_key_map)


def test_the_extension_keys_are_outside_kafkas_range_and_carried_by_their_schemas() -> None:
    assert min(EXTENSION) > max(api_key_map)
    assert set(schema.SCHEMAS) == EXTENSION
    for key, versions in schema.SCHEMAS.items():
        for request, response in versions.values():
            assert request.__api_key__ == response.__api_key__ == key


def test_a_key_is_still_the_int_on_the_wire() -> None:
    assert ApiKey.JOIN_GROUP == 11 and {11: "join"}[ApiKey.JOIN_GROUP] == "join"
    assert f"{ApiKey.JOIN_GROUP}" == "11"
