"""Every setting Apache Kafka's broker knows, for the keys this node does not act on itself.

`kafka_broker_settings.tsv` (next to this module) is Kafka 4.4.0's broker configuration: each key
of its ConfigDef with its type, default, valid values and whether Kafka defines it as internal,
as data (tests/coordinator/test_kafka_settings.py checks it against what the pinned broker's
DescribeConfigs lists). A `--set` (or `--config`) key
that none of this node's models takes (`ServerConfig`, the group coordinator's settings, the
cluster-only table) but Kafka knows is accepted when its value is one Kafka would take, shown by
DescribeConfigs as given, and announced once at start as having no effect here: so the
`server.properties` of an existing broker, or of a client library's test fixture, starts this
node unchanged. Kafka's prefixed forms are known too: `listener.name.NAME.KEY` (a per-listener
override of a known key, including `listener.name.NAME.MECHANISM.sasl.jaas.config`) and the
remote storage plug-ins' own settings (`rsm.config.`, `rlmm.config.`).

DIFFERS: Kafka's broker also starts with a key it does not know (it logs that the key "was
supplied but isn't a known config"); this node stops with one line naming the key, because a
misspelt setting that is silently ignored is the harder failure to find.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from importlib.resources import files
from typing import Final

from coordinator.wire.config_entries import ConfigEntry, ConfigSource, ConfigType

KAFKA_VERSION: Final = "4.4.0"
"""The Kafka release the table was read from (scripts/ensure-kafka pins the same)."""

_RANGES: Final = {
    ConfigType.SHORT: (-(2**15), 2**15 - 1),
    ConfigType.INT: (-(2**31), 2**31 - 1),
    ConfigType.LONG: (-(2**63), 2**63 - 1),
}
_PLUGIN_PREFIXES: Final = ("rsm.config.", "rlmm.config.")
_LISTENER_PREFIX: Final = re.compile(r"listener\.name\.[A-Za-z0-9_-]+\.(.+)")
_MECHANISM_PREFIXED: Final = re.compile(r"[a-z0-9-]+\.(sasl\..+)")
_BOUNDS: Final = re.compile(r"\[(-?[\d.E]+),\.\.\.(?:,(-?[\d.E]+))?\](?: or (-?\d+))?")
_CHOICES: Final = re.compile(r"(\(case insensitive\) )?\[(.+)\]")


@dataclass(frozen=True, slots=True)
class KafkaSetting:
    """One broker setting as Kafka defines it."""

    name: str
    kind: ConfigType
    default: str | None
    """Kafka's default as text; None where Kafka has none or null."""
    valid: str
    """Kafka's description of the valid values ('[1,...]', '[delete, compact]', ...; '' any)."""
    internal: bool = False
    """Defined as internal by Kafka: accepted, never shown by its DescribeConfigs."""


@functools.cache
def kafka_broker_settings() -> dict[str, KafkaSetting]:
    """Kafka's broker settings by name."""
    text = files("coordinator.node").joinpath("kafka_broker_settings.tsv").read_text("utf-8")
    table = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        name, kind, default, valid, internal = line.split("\t")
        value = None if default in ("<none>", "<null>") else default
        table[name] = KafkaSetting(name, ConfigType[kind], value, valid, internal == "internal")
    return table


def kafka_setting(key: str) -> KafkaSetting | None:
    """The Kafka setting `key` is, or stands for (a listener-prefixed or plug-in key); None
    for a key Kafka's broker does not know."""
    table = kafka_broker_settings()
    if key in table:
        return table[key]
    if key.startswith(_PLUGIN_PREFIXES) and key not in _PLUGIN_PREFIXES:
        return KafkaSetting(key, ConfigType.STRING, None, "")
    prefixed = _LISTENER_PREFIX.fullmatch(key)
    if prefixed is not None:
        rest = prefixed[1]
        mechanism = _MECHANISM_PREFIXED.fullmatch(rest)
        base = table.get(rest) or (table.get(mechanism[1]) if mechanism else None)
        if base is not None:
            return KafkaSetting(key, base.kind, base.default, base.valid)
    return None


def unknown_setting_message(key: str, known: frozenset[str] = frozenset()) -> str:
    """Why `key` is refused, with the closest Kafka names when there are any."""
    names = [*kafka_broker_settings(), *known]
    close = difflib.get_close_matches(key, names, n=2, cutoff=0.8)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"unknown setting {key!r}: Kafka {KAFKA_VERSION}'s broker has no such setting{hint}"


def check_kafka_value(setting: KafkaSetting, raw: str) -> str:
    """The value as Kafka reads it, or `ValueError` saying what the setting takes (Kafka's type
    and valid values; the message does not repeat the key)."""
    text = raw.strip()
    kind = setting.kind
    if kind is ConfigType.BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise ValueError(f"takes true or false (got {raw!r})")
        return text.lower()
    if kind in _RANGES or kind is ConfigType.DOUBLE:
        number = _number(kind, text, raw)
        _check_bounds(setting.valid, number, raw)
        return text
    if kind is ConfigType.LIST:
        items = [item.strip() for item in text.split(",") if item.strip()]
        if setting.valid == "non-empty list" and not items:
            raise ValueError("takes a non-empty list")
        for item in items:
            _check_choice(setting.valid, item, raw)
        return ",".join(items)
    if setting.valid == "non-empty string" and not text:
        raise ValueError("takes a non-empty string")
    _check_choice(setting.valid, text, raw)
    return text


def _number(kind: ConfigType, text: str, raw: str) -> float:
    if kind is ConfigType.DOUBLE:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"takes a number (got {raw!r})") from None
    try:
        number = int(text)
    except ValueError:
        raise ValueError(f"takes a whole number (got {raw!r})") from None
    low, high = _RANGES[kind]
    if not low <= number <= high:
        raise ValueError(f"must be in [{low}, {high}] (got {raw!r})")
    return number


def _check_bounds(valid: str, number: float, raw: str) -> None:
    bounds = _BOUNDS.fullmatch(valid)
    if bounds is None:
        return
    low, high, also = bounds.groups()
    if also is not None and number == float(also):
        return
    if number < float(low) or (high is not None and number > float(high)):
        allowed = f"at least {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"must be {allowed}{f' or {also}' if also else ''} (got {raw!r})")


def _check_choice(valid: str, value: str, raw: str) -> None:
    choices = _CHOICES.fullmatch(valid)
    if choices is None or "..." in valid:
        return
    allowed = [choice.strip() for choice in choices[2].split(",")]
    fold = choices[1] is not None
    if (value.lower() if fold else value) not in (
        [a.lower() for a in allowed] if fold else allowed
    ):
        raise ValueError(f"must be one of {', '.join(allowed)} (got {raw!r})")


def inert_entries(given: dict[str, str]) -> list[ConfigEntry]:
    """DescribeConfigs' read-only entries for the inert settings given (passwords hidden)."""
    entries = []
    source = ConfigSource.STATIC_BROKER_CONFIG
    for name, value in given.items():
        setting = kafka_setting(name)
        kind = setting.kind if setting is not None else ConfigType.STRING
        shown = None if kind is ConfigType.PASSWORD else value
        entries.append(ConfigEntry(name, shown, source, kind, True, ((name, shown, source),)))
    return entries


def announced(given: dict[str, str]) -> str:
    """The inert settings as the start-up line lists them (passwords hidden)."""
    shown = []
    for name, value in sorted(given.items()):
        setting = kafka_setting(name)
        hidden = setting is not None and setting.kind is ConfigType.PASSWORD
        shown.append(f"{name}={'[hidden]' if hidden else value}")
    return ", ".join(shown)
