"""The package's shape, read from its source: layers that point one way, one seam for servers.

ARCHITECTURE.md draws the layers; these tests keep the drawing true. Each rule reads the code
itself (its import statements, ``importlib.import_module`` calls, comparisons and sizes), so a
change that breaks a rule fails here with the file and line to look at, not in review.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "simsql"

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("text and bits", ("text",)),
    ("schema and names", ("schema",)),
    ("backends", ("dialects",)),
    ("store and queries", ("store", "queries")),
    ("lifecycle", ("lifecycle",)),
    ("front ends", ("alembic", "asyncio", "cli", "demo", "django", "embedded") + ("bits", "citus", "errors", "fingerprint", "lists", "sqlmodel", "urls")),
)
"""Lowest first, by folder: a module may import from its own layer and those before it, never
after. The modules loose at the top of ``simsql/`` are :data:`PUBLIC_FACES`, beside the front
ends: each re-exports the public names of one home from the layers below."""

PUBLIC_FACES = ("bits", "citus", "errors", "fingerprint", "lists", "sqlmodel", "urls")
"""The documented public modules at the top of ``simsql/`` (docs/api.md, "Modules"): the only
files there beside ``__init__.py``; everything else lives in the folder of its layer."""


@dataclass(frozen=True)
class Module:
    name: str  # dotted, e.g. "simsql.lifecycle.attach"
    path: Path
    tree: ast.Module

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"


def _modules() -> list[Module]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.append(Module(".".join(parts), path, ast.parse(path.read_text(encoding="utf-8"), str(path))))
    return found


MODULES = _modules()
NAMES = {module.name for module in MODULES}


def _resolve(module: Module, level: int, target: str | None) -> str:
    """The absolute dotted name a ``from`` import of ``level`` dots refers to."""
    if level == 0:
        return target or ""
    base = module.name.split(".")
    if not module.is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _known(name: str) -> str | None:
    """The simsql module ``name`` is, or is inside of (``simsql.x.y`` -> ``simsql.x`` if y is a
    name, not a module)."""
    while name:
        if name in NAMES:
            return name
        name = name.rpartition(".")[0]
    return None


@dataclass(frozen=True)
class Edge:
    source: Module
    target: str
    names: tuple[str, ...]
    line: int


def _edges(module: Module) -> Iterator[Edge]:
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _known(alias.name)
                if target and target != module.name:
                    yield Edge(module, target, (), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, node.level, node.module)
            for alias in node.names:
                submodule = _known(f"{base}.{alias.name}")
                if submodule == f"{base}.{alias.name}":  # `from pkg import submodule`
                    if submodule != module.name:
                        yield Edge(module, submodule, (), node.lineno)
                    continue
                target = _known(base)
                if target and target != module.name:
                    yield Edge(module, target, (alias.name,), node.lineno)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            target = _known(node.args[0].value)
            if target and target != module.name:
                yield Edge(module, target, (), node.lineno)


EDGES = [edge for module in MODULES for edge in _edges(module)]


def _is_ancestor(package: str, module: str) -> bool:
    return module.startswith(package + ".")


def test_no_import_cycles() -> None:
    """Tarjan's strongly connected components over every import between simsql's modules,
    static or through importlib. A package's ``__init__`` re-exporting its own submodules, and
    those submodules being imported through it by outsiders, is the one shape not counted: a
    submodule importing its own package's ``__init__`` is."""
    graph: dict[str, set[str]] = {name: set() for name in NAMES}
    for edge in EDGES:
        if _is_ancestor(edge.source.name, edge.target):
            continue  # a package's __init__ importing its own submodules
        graph[edge.source.name].add(edge.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    assert not cycles, f"import cycles: {cycles}"


def _layer(name: str) -> int | None:
    parts = name.split(".")
    if len(parts) < 2:
        return None  # simsql/__init__.py: the public API, above everything
    for number, (_, members) in enumerate(LAYERS):
        if parts[1] in members:
            return number
    return None


def test_every_module_has_a_layer() -> None:
    assert [name for name in NAMES if name != "simsql" and _layer(name) is None] == []


def test_imports_point_down() -> None:
    upward = []
    for edge in EDGES:
        source, target = _layer(edge.source.name), _layer(edge.target)
        if source is None or target is None:
            continue
        if target > source:
            upward.append(
                f"{edge.source.path.relative_to(ROOT)}:{edge.line}: {LAYERS[source][0]} imports "
                f"{edge.target} ({LAYERS[target][0]})"
            )
    assert upward == [], "\n".join(upward)


def test_no_private_name_crosses_a_module() -> None:
    """A ``_name`` imported from another module, or read as ``module._name``, is a seam that was
    never declared: it belongs public in the lower module, or the caller belongs beside it."""
    found = []
    for edge in EDGES:
        for name in edge.names:
            if name.startswith("_") and not name.startswith("__"):
                found.append(f"{edge.source.path.relative_to(ROOT)}:{edge.line}: {name} from {edge.target}")
    for module in MODULES:
        imported = {
            alias.asname or alias.name
            for node in ast.walk(module.tree)
            if isinstance(node, ast.ImportFrom) and _known(_resolve(module, node.level, node.module))
            for alias in node.names
        }
        for node in ast.walk(module.tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in imported
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                found.append(f"{module.path.relative_to(ROOT)}:{node.lineno}: {node.value.id}.{node.attr}")
    assert found == [], "\n".join(found)


_DIALECT_BRANCH = re.compile(
    r"\bis_mysql\(|\bdialect\.name\s*(==|!=|\bin\b|\bnot\b)|\bMYSQL_NAMES\b|[\"'](mysql|mariadb|postgresql)[\"']"
)

NOT_BRANCHES = {
    "simsql/schema/names.py": "the registry's column types name their MySQL variant (SQLAlchemy's "
    "with_variant: one declared type, compiled per dialect, no runtime branch)",
    "simsql/schema/urls.py": "which driver a plain URL scheme means, decided before any dialect exists",
}
"""Files where a server's name appears for a reason other than branching on it."""


def test_no_dialect_branch_outside_the_backends() -> None:
    """Code above ``simsql.dialects`` asks its backend; it never asks which server this is."""
    found = []
    for module in MODULES:
        relative = str(module.path.relative_to(ROOT))
        if module.name.startswith("simsql.dialects") or relative in NOT_BRANCHES:
            continue
        for number, line in enumerate(module.path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if _DIALECT_BRANCH.search(code):
                found.append(f"{relative}:{number}: {line.strip()}")
    assert found == [], "\n".join(found)


FAMILIES = ("simsql.dialects.postgresql", "simsql.dialects.mysql", "simsql.dialects.citus")
"""The server families' packages: their backends, DDL, catalog reads, backfill statements."""


def test_no_family_module_is_imported_above_the_seam() -> None:
    """Code outside ``simsql.dialects`` reaches a family only through ``backend(bind)``: an import
    of a family module (``POSTGRES_DDL``, ``MySQLBatchSQL``, ``CitusBackend``) from above is a
    second seam beside the Backend, whatever the names it imports."""
    found = [
        f"{edge.source.path.relative_to(ROOT)}:{edge.line}: imports {edge.target}"
        for edge in EDGES
        if not edge.source.name.startswith("simsql.dialects")
        and any(edge.target == family or _is_ancestor(family, edge.target) for family in FAMILIES)
    ]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("module", MODULES, ids=lambda module: module.name)
def test_module_size(module: Module) -> None:
    lines = len(module.path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{module.path.relative_to(ROOT)} has {lines} lines"


def test_function_size() -> None:
    long = [
        f"{module.path.relative_to(ROOT)}:{node.lineno}: {node.name} has {node.end_lineno - node.lineno + 1} lines"
        for module in MODULES
        for node in ast.walk(module.tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == [], "\n".join(long)


def test_the_top_holds_the_public_faces_only() -> None:
    """At most 12 modules loose at the top (issue 39): ``__init__`` and the documented faces."""
    loose = sorted(path.stem for path in PACKAGE.glob("*.py") if path.name != "__init__.py")
    assert loose == sorted(PUBLIC_FACES)
    assert len(loose) + 1 <= 12


def test_every_layer_is_a_folder() -> None:
    """The layer table names folders (and the faces): each exists as a package of ``simsql``."""
    for _, members in LAYERS:
        for member in members:
            assert member in PUBLIC_FACES or (PACKAGE / member / "__init__.py").is_file(), member


def test_one_feature_one_name() -> None:
    """Partition lists are ``lists`` in every layer (text, store, queries, lifecycle, each
    family's DDL, the CLI, the public face); "partition" means native table partitions only."""
    files = {str(path.relative_to(ROOT)) for path in PACKAGE.rglob("*.py")}
    assert not [name for name in files if "partition" in name]
    lists = sorted(name for name in files if "lists" in Path(name).name)
    for layer in ("text", "store", "queries", "lifecycle", "dialects/postgresql", "dialects/mysql", "cli"):
        assert f"simsql/{layer}/lists.py" in lists, layer
    assert "simsql/lists.py" in lists
