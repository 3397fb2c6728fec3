"""The cluster's topic catalogue as tables: schema version 4.

* `topics(name, topic_id, partitions, configs, collision_key, created_at, changed_at)`: every
  topic of the cluster. The primary key on `name` is what makes exactly one of two concurrent
  CreateTopics of a name win; `collision_key` (the name with '.' as '_') is unique too, so two
  names Kafka deems colliding cannot both be created, even at once on two nodes. `topic_id` is
  chosen by the node whose insert wins, and every node uses it.
* `deleted_topics(topic_id, name, deleted_at)`: the ids of deleted topics, so a node that was
  away when a topic was deleted removes its local copy instead of bringing it back.
* `topic_catalogue_version(version)`: one row, one more on every change (a row trigger on
  `topics`), which also announces the change by NOTIFY on `TOPICS_CHANNEL`: nodes poll the
  version and read the catalogue only when it moved.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

TOPICS_CHANNEL: Final = "rebalance_topics"
"""The NOTIFY channel every catalogue change is announced on (a hint; nodes also poll)."""

TOPIC_CATALOGUE: Final = f"""
CREATE TABLE IF NOT EXISTS topics (
    name          text        PRIMARY KEY,
    topic_id      uuid        NOT NULL UNIQUE,
    partitions    integer     NOT NULL CHECK (partitions > 0),
    configs       jsonb       NOT NULL DEFAULT '{{}}',
    collision_key text        NOT NULL UNIQUE,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    changed_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE IF NOT EXISTS deleted_topics (
    topic_id   uuid        PRIMARY KEY,
    name       text        NOT NULL,
    deleted_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE IF NOT EXISTS topic_catalogue_version (version bigint NOT NULL);
INSERT INTO topic_catalogue_version (version)
    SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM topic_catalogue_version);
CREATE OR REPLACE FUNCTION rebalance_topics_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE topic_catalogue_version SET version = version + 1;
    PERFORM pg_notify('{TOPICS_CHANNEL}', '');
    RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS topics_changed ON topics;
CREATE TRIGGER topics_changed AFTER INSERT OR UPDATE OR DELETE ON topics FOR EACH ROW
    EXECUTE FUNCTION rebalance_topics_changed();
"""

COLUMNS: Final = "name, topic_id, partitions, configs"


@dataclass(frozen=True)
class CatalogueTopic:
    """One row of `topics`: what every node's copy of the topic must be."""

    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, row: tuple[Any, ...]) -> CatalogueTopic:
        name, topic_id, partitions, configs = row
        if isinstance(configs, str):  # a driver that does not decode jsonb
            configs = json.loads(configs)
        as_id = topic_id if isinstance(topic_id, uuid.UUID) else uuid.UUID(str(topic_id))
        return cls(str(name), as_id, int(partitions), {str(k): str(v) for k, v in configs.items()})


def collision_key(name: str) -> str:
    """Kafka's collision rule: names that differ only by '.' against '_' collide."""
    return name.replace(".", "_")


def configs_json(configs: Mapping[str, str]) -> str:
    return json.dumps(dict(sorted(configs.items())))
