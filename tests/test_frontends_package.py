"""The shape of two front ends, simsql.embedded and simsql.demo (issue 20): small modules whose
imports point one way, no private name shared between modules, the old import paths kept, and
only the demo's runner writing to a stream.

Read from the source with :mod:`ast`; no database.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "simsql"

#: Each package's modules, lowest first: a module imports only modules before it.
LAYERS = {
    "embedded": ["errors", "paths", "locking", "account", "install", "url", "postmaster", "cluster", "server",
                 "users", "__init__"],
    "demo": ["progress", "corpus", "planting", "database", "report", "sections", "run", "__init__", "__main__"],
}  # fmt: skip
#: simsql modules the demo, a front end, may use: the public API a user has.
DEMO_MAY_IMPORT = {"simsql", "simsql.bits", "simsql.urls", "simsql.embedded", "simsql.dialects"}
"""The public API (the top level, and its documented homes ``simsql.bits`` and ``simsql.urls``), plus ``simsql.dialects.backend``, the declared seam a server-portable caller
asks (ARCHITECTURE.md): the demo takes its advisory lock and names the server through it on
PostgreSQL and MySQL/MariaDB alike (issue 23 item 7), never one server's SQL."""

MODULES = [(package, module) for package, modules in LAYERS.items() for module in modules]


def _tree(package: str, module: str) -> ast.Module:
    return ast.parse((PACKAGE / package / f"{module}.py").read_text(encoding="utf-8"))


def _imports(package: str, module: str) -> list[tuple[str, list[ast.alias]]]:
    """``(absolute module, names)`` for every import of the module."""
    found = []
    for node in ast.walk(_tree(package, module)):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                parts = ["simsql", package][: 3 - node.level]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            found.append((base, node.names))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, [alias]) for alias in node.names)
    return found


def test_every_module_is_listed_in_its_layers() -> None:
    for package, modules in LAYERS.items():
        assert sorted(p.stem for p in (PACKAGE / package).glob("*.py")) == sorted(modules)


@pytest.mark.parametrize(("package", "module"), MODULES)
def test_modules_and_functions_are_short(package: str, module: str) -> None:
    source = (PACKAGE / package / f"{module}.py").read_text(encoding="utf-8")
    assert len(source.splitlines()) <= 600
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno is not None
            assert node.end_lineno - node.lineno + 1 <= 60, f"{module}.{node.name}"


@pytest.mark.parametrize(("package", "module"), MODULES)
def test_imports_point_down_without_private_names_or_aliases(package: str, module: str) -> None:
    order = LAYERS[package]
    for base, names in _imports(package, module):
        for alias in names:
            assert alias.asname is None, f"{module}: import {alias.name} as {alias.asname}"
            if base.startswith("simsql"):
                assert not alias.name.startswith("_"), f"{module} imports {base}.{alias.name}"
        prefix = f"simsql.{package}."
        if base.startswith(prefix):
            lower = base.removeprefix(prefix).split(".")[0]
            assert order.index(lower) < order.index(module), f"{module} imports {base}"
        elif base == f"simsql.{package}":
            assert module == "__main__", f"{module} imports its own package"


@pytest.mark.parametrize("module", LAYERS["demo"])
def test_the_demo_uses_the_public_api(module: str) -> None:
    used = {base for base, _ in _imports("demo", module) if base.startswith("simsql") and not base.startswith("simsql.demo")}
    assert used <= DEMO_MAY_IMPORT, module


@pytest.mark.parametrize(("package", "module"), MODULES)
def test_only_the_demo_runner_writes_to_a_stream(package: str, module: str) -> None:
    calls = {
        node.func.id if isinstance(node.func, ast.Name) else node.func.attr
        for node in ast.walk(_tree(package, module))
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))
    }
    assert "basicConfig" not in calls and "addHandler" not in calls, module
    if (package, module) != ("demo", "run"):
        assert "print" not in calls, module


def test_old_import_paths_still_work() -> None:
    import simsql.demo
    import simsql.embedded

    for name in ["EmbeddedPostgresUnavailable", "default_data_dir", "embedded_url", "stop_embedded",
                 "_wheel_install", "_ensure_account", "_can_run", "_copy_install"]:  # fmt: skip
        assert callable(getattr(simsql.embedded, name)), name
    for name in ["SCHEMA", "DemoArticle", "PlantedCopy", "load_corpus", "main", "plant_copies", "run_demo",
                 "MIN_ARTICLE_CHARS", "MAX_ARTICLES", "MAX_DISTANCE", "NEW_TEXT", "SEED"]:  # fmt: skip
        assert hasattr(simsql.demo, name), name
    assert issubclass(simsql.embedded.EmbeddedPostgresUnavailable, simsql.SimsqlError)


def test_demo_runs_as_a_module() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "simsql.demo", "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "python -m simsql.demo" in result.stdout
    assert result.stderr == ""
