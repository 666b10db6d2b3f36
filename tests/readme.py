"""The code blocks of the README and of docs/*.md, by their info string (```python, ```sh alembic, ...),
and the fresh interpreter that runs a page's Python blocks as a newcomer would."""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: The URL the README writes where a user puts their own; tests put theirs in its place.
PLACEHOLDER_URL = "postgresql+psycopg://user@host/dbname"

_FENCE = re.compile(r"(?:^<!--[ \t]*([^\n]*?)[ \t]*-->\n)?^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
#: A block preceded by ``<!-- not run: why -->`` is a fragment; by ``<!-- postgresql only: why -->``
#: it runs on PostgreSQL only. Any other comment right above a block is refused (a typo would
#: otherwise skip nothing, silently).
MARKS = ("not run", "postgresql only")


@dataclass(frozen=True)
class Block:
    info: str
    code: str
    mark: str | None  # one of MARKS, or None


def documents() -> list[Path]:
    """The README, then every page of docs/, in name order."""
    return [README, *sorted(DOCS.glob("*.md"))]


def fenced(document: Path) -> list[Block]:
    """Every fenced block of ``document``, in order, with the mark of the comment above it."""
    return fenced_text(document.read_text(encoding="utf-8"), document.name)


def fenced_text(markdown: str, name: str = "markdown") -> list[Block]:
    """Every fenced block of ``markdown``, in order, with the mark of the comment above it."""
    found = []
    for comment, info, code in _FENCE.findall(markdown):
        mark = comment.split(":", 1)[0].strip() if comment else None
        if mark is not None and mark not in MARKS:
            raise AssertionError(f"{name}: unknown mark {comment!r} above a block (known: {MARKS})")
        found.append(Block(info.strip(), code, mark))
    return found


def blocks(info: str, document: Path = README) -> list[str]:
    """The bodies of the fenced blocks of ``document`` whose info string is exactly ``info``, in order."""
    return [block.code for block in fenced(document) if block.info == info]


def commands(block: str) -> list[str]:
    """The shell commands of a block: one a line, comments and blank lines left out."""
    lines = (line.split(" #", 1)[0].strip() for line in block.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def python_blocks(document: Path, server: str) -> list[str]:
    """The ```python blocks of ``document`` that run on ``server`` ("postgresql" or "mysql")."""
    return [
        block.code
        for block in fenced(document)
        if block.info == "python" and block.mark != "not run" and (block.mark is None or server == "postgresql")
    ]


def run_blocks(code: list[str], name: str, database_url: str) -> str:
    """Run ``code`` (a page's Python blocks) in order, in one interpreter of its own given only
    ``DATABASE_URL`` (tests/run_blocks.py, forked from the session's fork server when there is
    one); what they printed."""
    from .command_line import python_module

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIMSQL_", "DATABASE_URL"))}
    env["DATABASE_URL"] = database_url
    with tempfile.TemporaryDirectory() as directory:
        spec = Path(directory) / "blocks.json"
        spec.write_text(json.dumps({"name": name, "blocks": code}), encoding="utf-8")
        result = python_module("tests.run_blocks", [str(spec)], cwd=ROOT, env=env, timeout=300)
    assert result.returncode == 0, f"{name}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.stdout.count("--- block") == len(code)
    return result.stdout


_PRINT_CLAIM = re.compile(r"^\s*print\(.*\)\s*#\s*(?:prints|e\.g\.)\s+(.+?)\s*$", re.MULTILINE)


def print_claims(code: list[str]) -> list[str]:
    """What the blocks promise to print: ``print(...)  # prints X`` (or ``# e.g. X``) gives X."""
    return [claim for block in code for claim in _PRINT_CLAIM.findall(block)]


def check_print_claims(code: list[str], printed: str, name: str) -> None:
    """Every ``# prints X`` of ``code`` is a promise to a reader running it: X must be printed."""
    for claim in print_claims(code):
        assert claim in printed, f"{name} promises {claim!r}; the blocks printed:\n{printed}"
