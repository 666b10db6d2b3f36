"""How a long operation reports how far it is: one callback type for every operation that takes one.

An operation that runs in phases (a fit of partition lists, a whole-table deduplication) calls
``progress(phase, done, total)`` after each step of a phase; the phases are the operation's own and
its docstring names them. Defined once here, below the queries and the lifecycle, so both and the
front ends that pass a callback through name the same type.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``: ``done`` steps of ``total`` in ``phase``, called from the
thread running the operation; what it returns is ignored."""

__all__ = ["Progress"]
