"""The import rules of the source tree, read from every module with `ast` (imports inside
functions and under `TYPE_CHECKING` count as much as those at the top).

- The pure packages (`rebalance`, `assignors`) never import I/O, clocks, randomness or Spark: the
  core is sans-I/O (time comes in as `now_ms`, randomness as an injected source, every effect goes
  out as a returned value), and they never import `coordinator`.
- `coordinator` is a ladder: each folder imports only the folders on the rungs below it (and
  itself); each folder's `__init__` docstring says so.
- No module imports itself round a circle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PURE_PACKAGES = ("rebalance", "assignors")
FORBIDDEN = frozenset(
    {"asyncio", "socket", "sqlite3", "time", "random", "threading", "pyspark", "selectors"}
)

#: The rungs of `coordinator`, bottom first. A module imports modules of its own folder and of the
#: folders on lower rungs only. The root modules (the package's `__init__`, `errors`,
#: `command_line`: how every layer fails) are under every rung. The partition log is storage the
#: node is assembled from (its app opens it, its APIs read it), so it stands under the node.
RUNGS: tuple[tuple[str, ...], ...] = (
    ("wire",),
    ("partition_log",),
    ("node",),
    ("groups",),
    ("cluster",),
    ("clients",),
    ("zookeeper", "conformance", "analytics"),
    ("testing",),
    ("demo",),
    ("cli",),
)
ROOT_MODULES = frozenset({"coordinator", "coordinator.errors", "coordinator.command_line"})
RUNG = {folder: level for level, folders in enumerate(RUNGS) for folder in folders}


def _imported_roots(tree: ast.AST) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _source_modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _imports(name: str, path: Path, known: Iterable[str]) -> set[str]:
    """The modules of the tree that `name` imports, wherever in it the import stands."""
    modules = set(known)

    def resolve(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(r for a in node.names if (r := resolve(a.name)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            for alias in node.names:
                target = resolve(f"{base}.{alias.name}") or resolve(base)
                if target:
                    found.add(target)
    found.discard(name)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _source_modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _folder(module: str) -> str | None:
    """The folder of `coordinator` a module belongs to; None for the root modules."""
    if module in ROOT_MODULES:
        return None
    return module.split(".")[1]


def _ladder_breaks(module: str, imported: Iterable[str]) -> list[str]:
    own = _folder(module)
    breaks = []
    for target in sorted(imported):
        if not target.startswith("coordinator"):
            continue
        theirs = _folder(target)
        if theirs is None or theirs == own:
            continue
        if own is None or RUNG[theirs] >= RUNG[own]:
            breaks.append(target)
    return breaks


GRAPH = _graph()
COORDINATOR_MODULES = sorted(m for m in GRAPH if m.split(".")[0] == "coordinator")
PURE_MODULES = sorted(m for m in GRAPH if m.split(".")[0] in PURE_PACKAGES)


@pytest.mark.parametrize("module", PURE_MODULES)
def test_pure_module_imports_no_io(module: str) -> None:
    path = _source_modules()[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    bad = _imported_roots(tree) & FORBIDDEN
    assert not bad, f"{module} imports {sorted(bad)}"


@pytest.mark.parametrize("module", PURE_MODULES)
def test_pure_module_imports_no_coordinator(module: str) -> None:
    assert not [t for t in GRAPH[module] if t.split(".")[0] == "coordinator"]


@pytest.mark.parametrize("module", COORDINATOR_MODULES)
def test_coordinator_module_imports_only_lower_rungs(module: str) -> None:
    assert not _ladder_breaks(module, GRAPH[module]), (
        f"{module} (rung {_folder(module)}) imports {_ladder_breaks(module, GRAPH[module])}"
    )


def test_every_coordinator_folder_is_on_a_rung() -> None:
    folders = {p.name for p in (SRC / "coordinator").iterdir() if (p / "__init__.py").is_file()}
    assert folders == set(RUNG)


@pytest.mark.parametrize(
    "init",
    sorted((SRC / "coordinator").glob("*/__init__.py")),
    ids=lambda p: str(p.parent.relative_to(SRC)),
)
def test_every_coordinator_folder_says_what_it_may_import(init: Path) -> None:
    docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    assert "May import" in docstring, f"{init.relative_to(SRC)}: no 'May import' in its docstring"


def test_no_module_imports_itself_round_a_circle() -> None:
    assert _cycles(GRAPH) == []


def test_checker_catches_forbidden_imports() -> None:
    tree = ast.parse("import os\ndef f():\n    import time\nfrom asyncio import sleep\n")
    assert _imported_roots(tree) & FORBIDDEN == {"time", "asyncio"}


def test_checker_finds_circles_and_ladder_breaks() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e2"}, "e2": {"e"}}
    assert sorted(_cycles(graph)) == [["a", "b", "c"], ["e", "e2"]]
    assert _ladder_breaks("coordinator.node.app", ["coordinator.groups.runtime"]) == [
        "coordinator.groups.runtime"
    ]
    assert _ladder_breaks("coordinator.zookeeper.x", ["coordinator.analytics.y"]) == [
        "coordinator.analytics.y"
    ]
    assert _ladder_breaks("coordinator.wire.codec", ["coordinator.errors"]) == []
    assert _ladder_breaks("coordinator.errors", ["coordinator.wire.codec"]) == [
        "coordinator.wire.codec"
    ]


def test_checker_sees_imports_inside_functions_and_type_checking(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg.a import A\n"
        "def f():\n    from pkg import b\n",
        encoding="utf-8",
    )
    assert _imports("m", module, ["m", "pkg", "pkg.a", "pkg.b"]) == {"pkg.a", "pkg.b"}


def test_pure_packages_exist() -> None:
    assert all((SRC / pkg / "__init__.py").is_file() for pkg in PURE_PACKAGES)
