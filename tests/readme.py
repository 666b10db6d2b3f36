"""The README's code blocks, by their info string (```python, ```sh alembic, ...)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
#: The URL the README writes where a user puts their own; tests put theirs in its place.
PLACEHOLDER_URL = "postgresql+psycopg://user@host/dbname"

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def blocks(info: str) -> list[str]:
    """The bodies of the fenced blocks whose info string is exactly ``info``, in order."""
    return [body for found, body in _FENCE.findall(README.read_text(encoding="utf-8")) if found.strip() == info]


def commands(block: str) -> list[str]:
    """The shell commands of a block: one a line, comments and blank lines left out."""
    lines = (line.split(" #", 1)[0].strip() for line in block.splitlines())
    return [line for line in lines if line and not line.startswith("#")]
