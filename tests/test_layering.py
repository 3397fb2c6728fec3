"""The pure packages (`rebalance`, `assignors`) never import I/O, clocks, randomness or Spark.

The core is sans-I/O: time comes in as `now_ms`, randomness as an injected source, and every
effect goes out as a returned value. This test parses every module with `ast` so that a forbidden
import anywhere (even inside a function) fails the build.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PURE_PACKAGES = ("rebalance", "assignors")
FORBIDDEN = frozenset(
    {"asyncio", "socket", "sqlite3", "time", "random", "threading", "pyspark", "selectors"}
)


def _imported_roots(tree: ast.AST) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def _modules() -> list[Path]:
    return sorted(p for pkg in PURE_PACKAGES for p in (SRC / pkg).rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_pure_module_imports_no_io(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    bad = _imported_roots(tree) & FORBIDDEN
    assert not bad, f"{path.relative_to(SRC)} imports {sorted(bad)}"


def test_checker_catches_forbidden_imports() -> None:
    tree = ast.parse("import os\ndef f():\n    import time\nfrom asyncio import sleep\n")
    assert _imported_roots(tree) & FORBIDDEN == {"time", "asyncio"}


def test_pure_packages_exist() -> None:
    assert all((SRC / pkg / "__init__.py").is_file() for pkg in PURE_PACKAGES)
