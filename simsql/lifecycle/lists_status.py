"""What :func:`simsql.status` says of a table's partition lists: their sizes and the rows left behind."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sqlalchemy import and_, column, func, or_, select, table
from sqlalchemy.engine import Connection

from ..schema.names import Attachment
from ..store.lists import generations
from ..text.lists import LIST_SPAN


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


def lists_status(connection: Connection, entry: Attachment) -> ListsStatus | None:
    """The lists of an attached table (None without any)."""
    live = generations(connection, entry.table_schema, entry.table_name)
    if not live or entry.side_table:
        return None
    names = entry.names
    sizes = list_sizes(connection, entry.table_schema, entry.table_name, names.part)
    t = table(entry.table_name, column(names.fingerprint), column(names.part), schema=entry.table_schema)
    held = [and_(t.c[names.part] >= g.generation * LIST_SPAN, t.c[names.part] < (g.generation + 1) * LIST_SPAN) for g in live]
    behind = connection.execute(
        select(func.count()).select_from(t).where(t.c[names.fingerprint].is_not(None), or_(t.c[names.part].is_(None), ~or_(*held)))
    ).scalar_one()
    newest = live[-1]
    return ListsStatus(newest.generation, newest.state, newest.lists, max(sizes, default=0),
                       int(np.median(sizes)) if sizes else 0, int(behind))  # fmt: skip


__all__ = ["ListsStatus", "list_sizes", "lists_status"]
