"""How the demo's report is written: the line sink, the timings it collects, and short formats.

Only :func:`simsql.demo.run.run_demo` turns ``Say`` into writes to its output stream; every
section writes through the ``say`` it is given.
"""

from __future__ import annotations

from collections.abc import Callable

from .database import DemoArticle
from .planting import PlantedCopy

__all__ = ["Say", "Timings", "kind_label", "ms", "shorten"]

Say = Callable[[str], None]
"""Writes one line of the report."""
Timings = list[tuple[str, float]]
"""``(step, seconds)`` in the order the steps ran; printed at the end."""


def shorten(value: str, width: int) -> str:
    """``value`` cut to ``width`` characters, with an ellipsis when cut."""
    return value if len(value) <= width else value[: width - 1] + "…"


def ms(seconds: float) -> str:
    """Seconds as milliseconds with one decimal."""
    return f"{seconds * 1000:.1f} ms"


def kind_label(row: DemoArticle, planted: dict[int, PlantedCopy]) -> str:
    """The note beside a row in a table: what it is a planted copy of, if it is one."""
    copy = planted.get(row.id)
    return f"planted: {copy.change}, copy of #{copy.source}" if copy else ""
