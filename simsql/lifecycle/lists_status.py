"""What :func:`simsql.status` says of a table's partition lists: their sizes, the rows left
behind, the recall curve the fit measured, and whether the table has drifted from it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sqlalchemy import and_, column, func, or_, select, table
from sqlalchemy.engine import Connection

from ..schema.names import Attachment
from ..store.lists import generations
from ..text.lists import LIST_SPAN, RecallCurve

DRIFT_SHARE = 0.2
"""The recall curve is a measurement of the table as it was fitted: once the fingerprinted rows
have grown or shrunk by this share, or this share of them is left behind, status says so."""


def drift(curve: RecallCurve | None, rows: int, left_behind: int) -> str | None:
    """Why the curve no longer describes the table (None while it does)."""
    if curve is None:
        return "no recall curve recorded (fitted before simsql 0.4): refit to measure it"
    if curve.rows and abs(rows - curve.rows) > DRIFT_SHARE * curve.rows:
        return f"{rows} fingerprinted rows, {curve.rows} when fitted: refit (simsql lists fit) to measure recall again"
    if rows and left_behind > DRIFT_SHARE * rows:
        return f"{left_behind} of {rows} rows left behind: place them (simsql lists place) or refit"
    return None


def list_sizes(connection: Connection, schema: str, table_name: str, part: str) -> list[int]:
    """The number of rows in each list that holds any (index-only: the list index covers it)."""
    t = table(table_name, column(part), schema=schema)
    rows = connection.execute(select(func.count()).select_from(t).where(t.c[part].is_not(None)).group_by(t.c[part]))
    return sorted(int(r[0]) for r in rows)


@dataclass(frozen=True)
class ListsStatus:
    """A table's partition lists as :func:`simsql.status` reports them: the drift a refit
    corrects shows as a largest list far above the median (a sample that did not represent the
    table, or rows added since of another kind)."""

    generation: int
    state: str
    """``current``, or ``filling`` while a fit places rows (or after one stopped: fit again)."""
    lists: int
    largest_list: int
    median_list: int
    rows_left_behind: int
    """Fingerprinted rows no live list holds: read by every query until placed."""
    recall: RecallCurve | None = None
    """Recall@10 against probes, as the fit measured it on held-out rows (text lists)."""
    drift: str | None = None
    """Why the curve no longer describes the table (rows added or removed since, rows left
    behind), or None."""


def lists_status(connection: Connection, entry: Attachment) -> ListsStatus | None:
    """The lists of an attached table (None without any)."""
    live = generations(connection, entry.table_schema, entry.table_name)
    if not live or entry.side_table:
        return None
    names = entry.names
    sizes = list_sizes(connection, entry.table_schema, entry.table_name, names.part)
    t = table(entry.table_name, column(names.fingerprint), column(names.part), schema=entry.table_schema)
    held = [and_(t.c[names.part] >= g.generation * LIST_SPAN, t.c[names.part] < (g.generation + 1) * LIST_SPAN) for g in live]
    fingerprinted = t.c[names.fingerprint].is_not(None)
    behind = int(connection.execute(
        select(func.count()).select_from(t).where(fingerprinted, or_(t.c[names.part].is_(None), ~or_(*held)))
    ).scalar_one())  # fmt: skip
    rows = int(connection.execute(select(func.count()).select_from(t).where(fingerprinted)).scalar_one())
    newest = live[-1]
    curve = RecallCurve.from_settings(newest.settings.get("recall")) if newest.kind == "modes" else None
    return ListsStatus(newest.generation, newest.state, newest.lists, max(sizes, default=0),
                       int(np.median(sizes)) if sizes else 0, behind, curve,
                       drift(curve, rows, behind) if newest.kind == "modes" else None)  # fmt: skip


__all__ = ["DRIFT_SHARE", "ListsStatus", "drift", "list_sizes", "lists_status"]
