"""How the demo shows progress: a tqdm bar on stderr that vanishes when done.

stdout carries the report (and may be a file or a test's buffer); the bars never mix into it.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["progress_bar"]


def progress_bar(total: int, desc: str, unit: str, show: bool | None = None) -> Any:
    """A context-managed bar with ``update(n)``; ``show=None`` draws it only on a terminal."""
    from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

    disable = None if show is None else not show
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=disable, leave=False)
