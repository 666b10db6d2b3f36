"""The command line as a package (issue 20): ``simsql.cli:main`` and the names the single module
offered stay where scripts and the console script find them, and the modules keep the shape
that made the split worth doing (short modules and functions, no private name shared)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import simsql
import simsql.cli

PACKAGE = Path(simsql.cli.__file__).resolve().parent
MODULES = sorted(PACKAGE.glob("*.py"))

# Public names of the former simsql/cli.py that scripts may have used.
FORMER_NAMES = (
    "EXIT_OK", "EXIT_ERROR", "EXIT_USAGE", "EXIT_INTERRUPTED", "URL_VARIABLES", "PREVIEW_CHARS", "log",
    "CommandError", "UsageError", "Interrupted", "normalise_url", "resolve_url", "open_engine",
    "write_json", "write_csv", "write_table", "write_records", "read_text", "rows_to_fingerprint",
    "run_backfill", "print_backfill_summary", "build_parser", "main",
    "cmd_db_upgrade", "cmd_db_downgrade", "cmd_db_current", "cmd_db_history", "cmd_attach", "cmd_detach",
    "cmd_status", "cmd_backfill", "cmd_refingerprint", "cmd_similar", "cmd_dupes", "cmd_fingerprint", "cmd_demo",
)  # fmt: skip


@pytest.mark.parametrize("name", FORMER_NAMES)
def test_former_names_are_reachable_from_simsql_cli(name: str) -> None:
    assert hasattr(simsql.cli, name)
    assert name in simsql.cli.__all__


def test_main_runs_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    assert simsql.cli.main(["fingerprint", "hello world", "--format", "json"]) == simsql.cli.EXIT_OK
    assert '"config_id"' in capsys.readouterr().out


def test_python_dash_m_runs_the_package() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "simsql.cli", "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"simsql {simsql.__version__}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_modules_and_functions_stay_short(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert len(source.splitlines()) <= 600
    long = [
        f"{node.name}: {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > 60
    ]  # fmt: skip
    assert not long


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_private_name_crosses_modules_and_no_submodule_imports_the_package(path: Path) -> None:
    """Shared helpers are public in the module that owns them; a submodule importing
    ``simsql.cli`` itself would run the package's ``__init__`` (and every command) first."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("simsql"):
            assert not [a.name for a in node.names if a.name.startswith("_")], f"{path.name}: {ast.dump(node)}"
            if path.name not in ("__init__.py", "__main__.py"):
                assert node.module != "simsql.cli", path.name
