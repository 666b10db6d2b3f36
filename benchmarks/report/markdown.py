"""Markdown formatting for BENCHMARKS.md: numbers to about three significant digits, ratios,
percentages and tables, each rendering a missing value as "–" so partial results still render."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

NOT_MEASURED = "_Not measured in this run._"


def is_num(x: object) -> bool:
    """A finite int or float (not a bool): a figure that can be printed."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def num(x: object, unit: str = "") -> str:
    """A number with about three significant digits, thousands separators; '–' when missing."""
    if not is_num(x):
        return "–"
    v = float(x)  # type: ignore[arg-type]
    a = abs(v)
    if isinstance(x, int) or (a < 1e15 and v == int(v) and a >= 1):
        return f"{int(v):,}" + unit
    if a >= 100:
        s = f"{v:,.0f}"
    elif a >= 10:
        s = f"{v:.1f}"
    elif a >= 1:
        s = f"{v:.2f}"
    elif a == 0:
        s = "0"
    elif a >= 0.001:
        s = f"{v:.3g}"
    else:
        s = f"{v:.1e}"
    return s + unit


def ratio(x: object) -> str:
    """A ratio like ``12×`` or ``0.42×``."""
    if not is_num(x):
        return "–"
    v = float(x)  # type: ignore[arg-type]
    if v >= 100:
        return f"{v:,.0f}×"
    if v >= 10:
        return f"{v:.0f}×"
    if v >= 1:
        return f"{v:.1f}×"
    return f"{v:.2g}×"


def pct(x: object) -> str:
    if not is_num(x):
        return "–"
    v = 100 * float(x)  # type: ignore[arg-type]
    if v == 0:
        return "0%"
    if v >= 10 or v == round(v):
        return f"{v:.0f}%"
    if v >= 1:
        return f"{v:.1f}%"
    return f"{v:.2g}%"


def rate(x: object) -> str:
    """A small rate (false-positive rate): percent when visible, else scientific."""
    if not is_num(x):
        return "–"
    v = float(x)  # type: ignore[arg-type]
    if v == 0:
        return "0"
    if v >= 0.001:
        return pct(v)
    return f"{v:.1e}"


def div(a: object, b: object) -> float | None:
    """``a / b`` when both are figures and ``b`` is not zero, else None."""
    if is_num(a) and is_num(b) and float(b) != 0:  # type: ignore[arg-type]
        return float(a) / float(b)  # type: ignore[arg-type]
    return None


def table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str | None = None) -> str:
    """A GitHub markdown table; ``align`` is one letter per column (l/r), default l then r."""
    header = list(header)
    align = align or "l" + "r" * (len(header) - 1)
    marks = [":--" if a == "l" else "--:" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks) + " |"]
    for row in rows:
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(lines)


def n_label(n: int | str) -> str:
    n = int(n)
    for div, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= div and n % (div // 10) == 0:
            v = n / div
            return f"{v:g}{suffix}"
    return f"{n:,}"


def slug(name: str) -> str:
    """``name`` as a file-name fragment (lower case, dashes)."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def get(d: Any, *keys: Any) -> Any:
    """``d[k1][k2]...``, or None as soon as a level is missing."""
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d
