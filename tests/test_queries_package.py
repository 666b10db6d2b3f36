"""simsql.queries is a package of one module per reason to change: what callers imported from the
single module still imports, settings still reach the planner, and imports inside it point down."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import simsql.queries

PACKAGE = Path(simsql.queries.__file__).parent

ORDER = ["targets", "plan_choice", "approximate", "planner", "plan_size", "within", "lists", "nearest", "wide", "wide_original", "originality", "pairs", "wide_duplicates", "duplicates", "batch", "vectors_exact", "pgvector", "vectors", "related"]
"""The package's modules, lowest first: each imports only modules before it."""


def _module(name: str) -> ast.Module:
    return ast.parse((PACKAGE / f"{name}.py").read_text())


def test_every_name_of_the_single_module_still_imports() -> None:
    names = [
        "BAND_BUDGET", "DEFAULT_PROBE_RADIUS", "DuplicatePair", "MAX_EXACT_BLOCK_DISTANCE", "MAX_PROBE_RADIUS",
        "MIN_BAND_BUDGET", "Match", "ORIGINALITY_CANDIDATES", "ORIGINALITY_DISTANCE", "ORIGINALITY_PROBE_RADIUS",
        "bounded_probe_radius", "duplicate_groups", "find_original", "most_similar", "most_similar_many",
        "near_duplicates", "near_duplicates_query", "originality_search", "similar_to",
    ]  # fmt: skip
    missing = [name for name in names if not hasattr(simsql.queries, name)]
    assert not missing


@pytest.mark.parametrize("name", ORDER)
def test_modules_import_only_the_modules_below_them_and_no_private_names(name: str) -> None:
    below = set(ORDER[: ORDER.index(name)])
    for node in ast.walk(_module(name)):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            if node.level == 1 and node.module is not None:
                assert node.module in below, f"{name} imports {node.module}"
            assert not any(alias.name.startswith("_") for alias in node.names), f"{name} imports a private name"


@pytest.mark.parametrize("name", ["__init__", *ORDER])
def test_modules_and_functions_stay_short(name: str) -> None:
    source = (PACKAGE / f"{name}.py").read_text()
    assert source.count("\n") <= 600
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            assert node.end_lineno is not None and node.end_lineno - start < 60, f"{name}.{node.name}"
