"""Placing rows in their lists, without collateral: what a fit, a refit and :func:`place_lists`
write, and how the table is left as fast as the fit found it.

Writes are set-based: each key-ordered batch is read, placed in numpy and written back in one
statement per batch (:meth:`simsql.dialects.ddl_plan.ListsDDL.write_lists`), and only rows whose
fingerprint is still the one read are changed, so a concurrent writer's row is never placed by a
stale value.

On PostgreSQL a row whose list changes gets a new version and, since the list column is indexed,
a new entry in *every* index of the table (no HOT update): a fit of every row would leave each
block index about twice its size, and ``find_original`` slower until a ``REINDEX``. So the fit
vacuums between slices of the table (:meth:`~simsql.dialects.ddl_plan.ListsDDL.tidy`: the space of
the versions it replaced is reused by the next slices; their index entries are left), measures
each index before and after, rebuilds online (``REINDEX INDEX CONCURRENTLY``) those grown by
more than :data:`REBUILD_GROWTH`, then vacuums once with the indexes. The row trigger returns at
once for these writes (:data:`simsql.dialects.postgresql.ddl.LISTS_WRITE`): they set no column
it checks. InnoDB updates in place and touches only the list index, which a fit leaves the size of a fresh online
build of it: MySQL and MariaDB need neither.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Engine, and_, column, func, literal, or_, select, table, tuple_
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from ..dialects import backend
from ..schema.names import Attachment
from ..store import registry
from ..store.awaiting import off_loop
from ..store.progress import Progress
from ..text.errors import SchemaError
from ..text.lists import Centres
from ..text.vectors import VectorFingerprinter, vector_of
from . import apply, catalog

BATCH_ROWS = 2000
CATCH_UP_PASSES = 5
"""Passes after the first, each over the rows still left behind, before the fit ends."""
TIDY_SLICES = 8
"""A fit vacuums (where the server needs it) after each eighth of the table it placed."""
REBUILD_GROWTH = 1.15
"""An index grown by more than this ratio during a fit is rebuilt online at its end."""
REBUILD_MIN_BYTES = 1 << 16
"""Smaller indexes are left as they are: a rebuild would save less than it costs."""


@dataclass(frozen=True)
class ListedTable:
    """An attached table (columns mode) whose lists are fitted, placed or dropped: where it is,
    its registry entry and its key."""

    schema: str
    entry: Attachment
    keys: tuple[str, ...]

    @property
    def names(self) -> Any:
        return self.entry.names

    @property
    def vector(self) -> bool:
        return self.entry.settings.get("kind") == "vector"

    def relation(self) -> Any:
        names = self.names
        cols = [*self.keys, names.fingerprint, names.part]
        if self.vector:
            cols.append(self.entry.source[0])
        return table(names.holder, *(column(c) for c in dict.fromkeys(cols)), schema=self.schema)


def attached_target(connection: Connection, table_name: str, schema: str | None) -> ListedTable:
    schema = schema or registry.current_schema(connection)
    entry = registry.read(connection, table_name, schema)
    if entry is None:
        raise catalog.not_attached(schema, table_name)
    if entry.side_table:
        raise SchemaError(
            f"{schema}.{table_name} keeps its fingerprints in a side table; partition lists need them in the table's own "
            "columns (attach it in columns mode)"
        )
    facts = catalog.require_table(connection, table_name, schema)
    return ListedTable(schema, entry, tuple(facts.keys))


def outside(t: Any, part: str, centres: Centres) -> Any:
    return or_(t.c[part].is_(None), t.c[part] < centres.base, t.c[part] > centres.base + centres.lists - 1)


def _placed_values(engine: Engine, target: ListedTable, centres: Centres, rows: Sequence[Any]) -> np.ndarray:
    width = len(target.keys)
    if target.vector:
        fingerprinter = registry.fingerprinter_from_settings(target.entry.settings)
        assert isinstance(fingerprinter, VectorFingerprinter)
        vectors = [vector_of(r[-1], target.entry.source[0]) for r in rows]
        return off_loop(lambda: centres.place(fingerprinter.check(np.stack([np.asarray(v, float) for v in vectors]))))
    from_db = backend(engine).fingerprint_from_db  # the signed bigint of PostgreSQL, MySQL's unsigned as it is
    return off_loop(lambda: centres.place(np.array([from_db(r[width]) for r in rows], np.uint64)))


def place_pass(engine: Engine, target: ListedTable, centres: Centres, progress: Progress | None, total: int, tidy_every: int = 0) -> int:
    """One key-ordered pass over the rows ``centres`` does not hold; rows placed. Every
    ``tidy_every`` rows placed (0: never) the table is tidied (:meth:`ListsDDL.tidy`)."""
    t = target.relation()
    names = target.names
    keys = [t.c[k] for k in target.keys]
    width = len(keys)
    read = [*keys, t.c[names.fingerprint]] + ([t.c[target.entry.source[0]]] if target.vector else [])
    lists_ddl = backend(engine).lists_ddl
    cursor: tuple[Any, ...] | None = None
    placed = tidied = 0
    while True:
        query = select(*read).where(t.c[names.fingerprint].is_not(None), outside(t, names.part, centres))
        if cursor is not None:
            query = query.where(tuple_(*keys) > tuple_(*(literal(v) for v in cursor)) if width > 1 else keys[0] > cursor[0])
        with engine.connect() as connection:
            rows = connection.execute(query.order_by(*keys).limit(BATCH_ROWS)).all()
        if not rows:
            return placed
        values = _placed_values(engine, target, centres, rows)
        written = [(*row[: width + 1], int(value)) for row, value in zip(rows, values)]
        placed += retrying(engine, lambda c: lists_ddl.write_lists(c, t, target.keys, names.fingerprint, names.part, written))
        cursor = tuple(rows[-1][:width])
        if tidy_every and placed - tidied >= tidy_every:
            apply.run_on_engine(engine, lists_ddl.tidy(target.schema, names.holder))
            tidied = placed
        if progress is not None:
            progress("place", placed, total)


def retrying(engine: Engine, write: Callable[[Connection], int], attempts: int = 5) -> int:
    """``write`` in a transaction of its own, again after a deadlock with a writer."""
    for attempt in range(attempts):
        try:
            with engine.begin() as connection:
                return write(connection)
        except DBAPIError as error:
            if attempt == attempts - 1 or "deadlock" not in str(error.orig).lower():
                raise
    return 0


def left_behind_rows(engine: Engine, target: ListedTable, live: Sequence[Centres]) -> int:
    t = target.relation()
    names = target.names
    held = [and_(t.c[names.part] >= c.base, t.c[names.part] <= c.base + c.lists - 1) for c in live]
    with engine.connect() as connection:
        query = select(func.count()).select_from(t).where(t.c[names.fingerprint].is_not(None))
        if held:
            query = query.where(~or_(*held) | t.c[names.part].is_(None))
        return int(connection.execute(query).scalar_one())


def fill(engine: Engine, target: ListedTable, centres: Centres, progress: Progress | None) -> int:
    """The first pass (tidied every :data:`TIDY_SLICES`-th of the table) and up to
    :data:`CATCH_UP_PASSES` more, until a pass places nothing."""
    total = left_behind_rows(engine, target, [centres])
    placed = place_pass(engine, target, centres, progress, total, tidy_every=max(BATCH_ROWS, total // TIDY_SLICES))
    for _ in range(CATCH_UP_PASSES):
        more = place_pass(engine, target, centres, progress, total)
        placed += more
        if not more:
            break
    return placed


def index_sizes(engine: Engine, target: ListedTable) -> dict[str, int]:
    """Bytes of each index of the table, where the server's fit may bloat them (else empty)."""
    with engine.connect() as connection:
        return backend(engine).lists_ddl.index_sizes(connection, target.schema, target.names.holder)


def rebuild_grown(engine: Engine, target: ListedTable, before: dict[str, int], progress: Progress | None) -> list[str]:
    """Rebuild online each index grown past :data:`REBUILD_GROWTH` times its size ``before``
    the fit, once what a stopped rebuild left is dropped; the indexes rebuilt. A fit then runs
    :meth:`~simsql.dialects.ddl_plan.ListsDDL.refresh`, whose vacuum reads the rebuilt indexes
    rather than the grown ones."""
    with engine.connect() as connection:
        leftovers = backend(engine).lists_ddl.stopped_rebuilds(connection, target.schema, target.names.holder)
    if leftovers:
        apply.run_on_engine(engine, leftovers)
    after = index_sizes(engine, target)
    grown = sorted(
        name for name, size in after.items()
        if size >= REBUILD_MIN_BYTES and size > REBUILD_GROWTH * max(before.get(name, 0), 1)
    )  # fmt: skip
    lists_ddl = backend(engine).lists_ddl
    for done, name in enumerate(grown, 1):
        apply.run_on_engine(engine, lists_ddl.rebuild(target.schema, target.names, [name]), relations=[f"{target.schema}.{target.names.holder}"])
        if progress is not None:
            progress("rebuild", done, len(grown))
    return grown


__all__ = [
    "BATCH_ROWS",
    "CATCH_UP_PASSES",
    "REBUILD_GROWTH",
    "ListedTable",
    "attached_target",
    "fill",
    "index_sizes",
    "left_behind_rows",
    "outside",
    "place_pass",
    "rebuild_grown",
    "retrying",
]
