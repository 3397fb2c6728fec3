"""A Java properties file read as Kafka reads `server.properties` (`java.util.Properties.load`).

Lines starting with `#` or `!` are comments; a key ends at the first unescaped `=`, `:` or
whitespace, and the separator's surrounding whitespace is dropped; a line ending in an odd number
of backslashes continues on the next (whose leading whitespace is dropped); `\\t`, `\\n`, `\\uXXXX`
and `\\` before any other character are unescaped. A later line for a key replaces an earlier
one. The file is read as UTF-8 (Java 9+ reads properties files so, falling back to Latin-1).
"""

from __future__ import annotations

from pathlib import Path

from coordinator.errors import OperationalError

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def read_properties(path: Path) -> dict[str, str]:
    """The file's settings, in order; `OperationalError` if it cannot be read."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise OperationalError(f"cannot read {path}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    settings: dict[str, str] = {}
    for line in _logical_lines(text):
        try:
            key, value = _split(line)
        except ValueError:  # a \u not followed by four hex digits, which Java refuses too
            raise OperationalError(f"cannot read {path}: malformed \\uXXXX in {line!r}") from None
        settings.pop(key, None)
        settings[key] = value
    return settings


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    pending: str | None = None
    for physical in text.splitlines():
        line = physical.lstrip(" \t\f")
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        continued = trailing % 2 == 1
        if continued:
            line = line[:-1]
        pending = line if pending is None else pending + line
        if not continued:
            lines.append(pending)
            pending = None
    if pending is not None:
        lines.append(pending)
    return lines


def _split(line: str) -> tuple[str, str]:
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\":
            index += 2
            continue
        if char in "=: \t\f":
            break
        index += 1
    key, rest = line[:index], line[index:]
    rest = rest.lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(rest)


def _unescape(text: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 == len(text):
            out.append(char)
            index += 1
            continue
        code = text[index + 1]
        if code == "u" and len(text) >= index + 6:
            out.append(chr(int(text[index + 2 : index + 6], 16)))
            index += 6
            continue
        out.append(_ESCAPES.get(code, code))
        index += 2
    return "".join(out)
