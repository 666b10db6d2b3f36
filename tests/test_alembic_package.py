"""``simsql.alembic`` is a package drawn as Alembic draws its own operations: ops (what an
operation carries and its reverse), toimpl (running it), render and compare (autogenerate), and
revisions (simsql's own history). Importing the package must keep registering everything with
Alembic, and every name users, migrations and the CLI import from it must stay importable.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from alembic.autogenerate import comparators, renderers
from alembic.operations import Operations

import simsql.alembic

PACKAGE = Path(simsql.alembic.__file__).parent

OPERATIONS = {
    "add_simhash": simsql.alembic.AddSimHashOp,
    "drop_simhash": simsql.alembic.DropSimHashOp,
    "create_simhash_indexes": simsql.alembic.CreateSimHashIndexesOp,
    "drop_simhash_indexes": simsql.alembic.DropSimHashIndexesOp,
    "create_simhash_trigger": simsql.alembic.CreateSimHashTriggerOp,
    "drop_simhash_trigger": simsql.alembic.DropSimHashTriggerOp,
    "upgrade_simsql": simsql.alembic.UpgradeSimsqlOp,
    "downgrade_simsql": simsql.alembic.DowngradeSimsqlOp,
}

# What tests, migrations, the CLI and the README use from ``simsql.alembic``, plus the typed twins.
PUBLIC = [
    "BRANCH", "OFFLINE_SCHEMA", "PrimaryKey", "config", "current", "downgrade", "history", "install", "script_location",
    "upgrade", "versions_path", "add_simhash", "drop_simhash", "create_simhash_indexes", "drop_simhash_indexes",
    "upgrade_simsql", "downgrade_simsql", "add_vector_index", "drop_vector_index", "AddVectorIndexOp",
    "DropVectorIndexOp", *(cls.__name__ for cls in OPERATIONS.values()),
]  # fmt: skip

# Which sibling modules each module may import: the order the package is drawn in.
SIBLINGS = {
    "ops": set(), "revisions": set(), "toimpl": {"ops", "revisions"}, "render": {"ops"}, "own": {"revisions"},
    "compare": {"ops", "own"},
}  # fmt: skip


@pytest.mark.parametrize("name", PUBLIC)
def test_public_name_is_importable_from_the_package(name: str) -> None:
    assert getattr(simsql.alembic, name) is not None
    assert name in simsql.alembic.__all__


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_import_registers_operation_implementation_and_renderer(name: str) -> None:
    operation = OPERATIONS[name]
    assert callable(getattr(Operations, name))
    assert renderers.dispatch(operation.__new__(operation)).__module__ == "simsql.alembic.render"
    assert Operations._to_impl.dispatch(operation.__new__(operation)).__module__ == "simsql.alembic.toimpl"


def test_import_registers_the_comparators() -> None:
    registered = {fn for entries in comparators._registry.values() for fn, _ in entries}
    assert simsql.alembic.compare.compare_triggers in registered
    assert simsql.alembic.compare.compare_for_mysql in registered
    assert simsql.alembic.own.leave_simsqls_objects in registered


def _tree(module: str) -> ast.Module:
    return ast.parse((PACKAGE / f"{module}.py").read_text())


@pytest.mark.parametrize("module", ["__init__", *SIBLINGS])
def test_module_and_function_sizes(module: str) -> None:
    source = (PACKAGE / f"{module}.py").read_text()
    assert len(source.splitlines()) < 600
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno is not None
            assert node.end_lineno - node.lineno + 1 <= 60, f"{module}.{node.name}"


@pytest.mark.parametrize("module", sorted(SIBLINGS))
def test_imports_point_down_and_name_nothing_private(module: str) -> None:
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.ImportFrom) and node.module is not None and node.level > 0:
            private = [a.name for a in node.names if a.name.startswith("_")]
            assert private == [], f"{module} imports {private} from {node.module}"
            if node.level == 1:
                assert node.module in SIBLINGS[module], f"{module} imports .{node.module}"
