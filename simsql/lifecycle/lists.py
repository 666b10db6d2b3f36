"""Partition lists' lifecycle: fit (and refit) online, place rows left behind, report, drop.

A fit adds the list column and its covering index where missing (an instant column, an online
index build), fits centres on a random sample of the fingerprinted rows
(:mod:`simsql.text.lists`), records them as a new generation in ``filling`` state, moves every
row into its nearest list in key-ordered batches, then makes the generation ``current`` and
deletes the ones it replaced. Nothing is ever out of reach meanwhile: queries probe the lists of
every live generation and read every row left behind (:mod:`simsql.store.lists`), so a fit
stopped at any point (an error, ``kill -9``) loses no row, and calling it again resumes the
``filling`` generation. A batch only moves rows whose fingerprint is still the one it read, so a
concurrent writer's row is never placed by a stale value; what writers leave behind is placed by
the fit's last passes, by :func:`place_lists` and by backfill.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xxhash
from sqlalchemy import Engine, and_, bindparam, column, delete, func, insert, literal, or_, select, table, tuple_, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from ..dialects import backend
from ..dialects.plan import Plan, Step
from ..schema.names import CENTRES_TABLE, PARTITIONS_TABLE, Attachment, centres_table, partitions_table
from ..schema.urls import engine_for
from ..store import registry
from ..store.lists import encode_centre, forget_cached, generations, live_centres, tables_exist
from ..store.awaiting import off_loop
from ..text.bits import to_signed
from ..text.errors import NotAttached, SchemaError, WouldLockTable
from ..text.lists import (
    DEFAULT_ITERATIONS,
    LIST_SPAN,
    MAX_GENERATION,
    Centres,
    check_lists,
    default_lists,
    default_sample,
    fit_means,
    fit_modes,
)
from ..text.vectors import VectorFingerprinter, vector_of
from . import apply, catalog
from .lists_status import list_sizes

BATCH_ROWS = 2000
CATCH_UP_PASSES = 5
"""Passes after the first, each over the rows still left behind, before the fit ends."""

Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``: ``phase`` is ``sample``, ``fit`` or ``place``."""


@dataclass(frozen=True)
class ListsResult:
    """What :func:`fit_lists` did."""

    schema: str
    table: str
    generation: int
    lists: int
    sample_rows: int
    rows_placed: int
    left_behind: int
    """Rows no live list held when the fit ended (writers racing its last pass); still read by
    every query, placed by the next :func:`place_lists` or backfill."""
    largest_list: int
    median_list: int
    fit_seconds: float
    place_seconds: float


@dataclass(frozen=True)
class Additions:
    """What a fit added to the table (a detach or a drop removes exactly that)."""

    index: bool
    column: bool

    def __or__(self, other: Additions) -> Additions:
        return Additions(self.index or other.index, self.column or other.column)


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


def _unsigned(stored: Any) -> int:
    """A fingerprint as read by raw SQL, unsigned: PostgreSQL's ``bigint`` holds it signed,
    MySQL/MariaDB's ``BIGINT UNSIGNED`` as it is (``to_unsigned`` refuses the latter)."""
    return int(stored) & 0xFFFFFFFFFFFFFFFF


def _engine(bind: Engine | str) -> Engine:
    return engine_for(bind) if isinstance(bind, str) else bind


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


def _add_objects(engine: Engine, target: ListedTable) -> Additions:
    """The list column and covering index where missing; which of them were added here."""
    with engine.connect() as connection:
        present = catalog.present(connection, target.schema, target.entry.table_name, target.names)
    plan = backend(engine).lists_ddl.add(target.schema, target.names, target.keys, present)
    relation = f"{target.schema}.{target.entry.table_name}"
    try:
        if plan:
            apply.run_on_engine(engine, plan, relations=[relation])
    except WouldLockTable as refused:
        raise WouldLockTable(
            f"{refused} To fit lists on {relation}, add the list column yourself when writers can wait "
            f"(ALTER TABLE {relation} ADD COLUMN {target.names.part} INT NULL), or declare the model with "
            "simsql.lists.ListsMixin (create_all makes it), then fit again: the index is built online"
        ) from refused
    return Additions(not present.has_index(target.names.part_index), not present.has_column(target.names.part))


def _sample(connection: Connection, target: ListedTable, sample: int | None, lists: int | None, seed: int) -> tuple[Any, int, int]:
    """The sample (unsigned fingerprints, or vectors) and the number of fingerprinted rows: the
    rows whose seeded hash of their key is smallest, so the sample depends on the table's keys
    and the seed alone, not on the order rows are read."""
    t = target.relation()
    names = target.names
    keys = [t.c[k] for k in target.keys]
    rows = connection.execute(select(*keys, t.c[names.fingerprint]).where(t.c[names.fingerprint].is_not(None))).all()
    if not rows:
        raise ValueError(
            f"{target.schema}.{target.entry.table_name} has no fingerprinted rows to fit lists on: "
            "insert or backfill rows first"
        )
    count = len(rows)
    wanted = check_lists(lists) if lists is not None else default_lists(count)
    if wanted > count:
        raise ValueError(f"lists={wanted} is more than the {count} fingerprinted rows of {target.entry.table_name}")
    size = min(count, sample) if sample is not None else default_sample(wanted, count)
    order = sorted(range(count), key=lambda i: xxhash.xxh3_64_intdigest(repr(tuple(rows[i][: len(keys)])).encode(), seed=seed))
    chosen = sorted(order[:size])
    if not target.vector:
        return np.array([_unsigned(rows[i][-1]) for i in chosen], dtype=np.uint64), wanted, count
    vectors = []
    source = t.c[target.entry.source[0]]
    picked = [tuple(rows[i][: len(keys)]) for i in chosen]
    for start in range(0, len(picked), 1000):
        part = picked[start : start + 1000]
        vectors += [vector_of(r[0], target.entry.source[0]) for r in connection.execute(
            select(source).where(tuple_(*keys).in_(part) if len(keys) > 1 else keys[0].in_([p[0] for p in part]))
        )]  # fmt: skip
    return np.stack([np.asarray(v, dtype=np.float64) for v in vectors]), wanted, count


def _store(engine: Engine, target: ListedTable, kind: str, centres: np.ndarray, settings: dict[str, Any], added: bool) -> Centres:
    """A new generation, ``filling``, with its centres, in one transaction."""
    with engine.begin() as connection:
        every = generations(connection, target.schema, target.entry.table_name, live_only=False)
        number = max(max((g.generation for g in every), default=0), _highest_in_rows(connection, target)) + 1
        if number > MAX_GENERATION:
            raise SchemaError(f"{target.entry.table_name} has used every generation number; drop its lists and fit again")
        where = {"table_schema": target.schema, "table_name": target.entry.table_name, "generation": number}
        connection.execute(insert(partitions_table).values(
            **where, state="filling", kind=kind, lists=len(centres), settings=settings, added_objects=added
        ))  # fmt: skip
        base = number * LIST_SPAN
        if kind == "modes":
            rows = [{**where, "list_value": base + i, "centre": to_signed(int(v)), "vector": None} for i, v in enumerate(centres)]
        else:
            rows = [{**where, "list_value": base + i, "centre": None, "vector": encode_centre(v)}
                    for i, v in enumerate(centres)]  # fmt: skip
        for start in range(0, len(rows), 500):
            connection.execute(insert(centres_table), rows[start : start + 500])
    forget_cached(target.schema, target.entry.table_name)
    return Centres(number, "modes" if kind == "modes" else "means", centres)


def _highest_in_rows(connection: Connection, target: ListedTable) -> int:
    """The newest generation a row's list value still names (0: none). After
    :func:`drop_lists` a model's list column keeps its values; a new generation of the same
    number would take them for its own lists and never place those rows again."""
    t = target.relation()
    highest = connection.execute(select(func.max(t.c[target.names.part]))).scalar()
    return 0 if highest is None else max(0, int(highest) // LIST_SPAN)


def _outside(t: Any, part: str, centres: Centres) -> Any:
    return or_(t.c[part].is_(None), t.c[part] < centres.base, t.c[part] > centres.base + centres.lists - 1)


def _write_batch(connection: Connection, target: ListedTable, rows: Sequence[Any], values: np.ndarray) -> int:
    """Set the list of each row read whose fingerprint is still the one read (one statement,
    sent for every row at once: the driver pipelines or batches it)."""
    t = target.relation()
    names = target.names
    width = len(target.keys)
    match = and_(*(t.c[k] == bindparam(f"k{i}") for i, k in enumerate(target.keys)), t.c[names.fingerprint] == bindparam("fp"))
    statement = update(t).where(match).values({names.part: bindparam("part")})
    params = [
        {**{f"k{i}": v for i, v in enumerate(row[:width])}, "fp": row[width], "part": int(value)}
        for row, value in zip(rows, values)
    ]
    result = connection.execute(statement, params)
    return int(result.rowcount or 0) if result.rowcount is not None and result.rowcount >= 0 else len(params)


def _place_pass(engine: Engine, target: ListedTable, centres: Centres, progress: Progress | None, total: int) -> int:
    """One key-ordered pass over the rows ``centres`` does not hold; rows placed."""
    t = target.relation()
    names = target.names
    keys = [t.c[k] for k in target.keys]
    fingerprinter = registry.fingerprinter_from_settings(target.entry.settings)
    read = [*keys, t.c[names.fingerprint]] + ([t.c[target.entry.source[0]]] if target.vector else [])
    cursor: tuple[Any, ...] | None = None
    placed = 0
    while True:
        query = select(*read).where(t.c[names.fingerprint].is_not(None), _outside(t, names.part, centres))
        if cursor is not None:
            query = query.where(tuple_(*keys) > tuple_(*(literal(v) for v in cursor)) if len(keys) > 1 else keys[0] > cursor[0])
        with engine.connect() as connection:
            rows = connection.execute(query.order_by(*keys).limit(BATCH_ROWS)).all()
        if not rows:
            return placed
        if target.vector:
            assert isinstance(fingerprinter, VectorFingerprinter)
            vectors = [vector_of(r[-1], target.entry.source[0]) for r in rows]
            values = off_loop(lambda: centres.place(fingerprinter.check(np.stack([np.asarray(v, float) for v in vectors]))))
        else:
            values = off_loop(lambda: centres.place(np.array([_unsigned(r[len(keys)]) for r in rows], np.uint64)))
        placed += _retrying(engine, lambda connection: _write_batch(connection, target, rows, values))
        cursor = tuple(rows[-1][: len(keys)])
        if progress is not None:
            progress("place", placed, total)


def _retrying(engine: Engine, write: Callable[[Connection], int], attempts: int = 5) -> int:
    """``write`` in a transaction of its own, again after a deadlock with a writer."""
    for attempt in range(attempts):
        try:
            with engine.begin() as connection:
                return write(connection)
        except DBAPIError as error:
            if attempt == attempts - 1 or "deadlock" not in str(error.orig).lower():
                raise
    return 0


def _left_behind(engine: Engine, target: ListedTable, live: Sequence[Centres]) -> int:
    t = target.relation()
    names = target.names
    held = [and_(t.c[names.part] >= c.base, t.c[names.part] <= c.base + c.lists - 1) for c in live]
    with engine.connect() as connection:
        query = select(func.count()).select_from(t).where(t.c[names.fingerprint].is_not(None))
        if held:
            query = query.where(~or_(*held) | t.c[names.part].is_(None))
        return int(connection.execute(query).scalar_one())


def _finish(engine: Engine, target: ListedTable, centres: Centres) -> None:
    """``centres`` becomes ``current``; the generations it replaces are deleted."""
    p, c = partitions_table.c, centres_table.c
    where = (p.table_schema == target.schema, p.table_name == target.entry.table_name)
    with engine.begin() as connection:
        connection.execute(delete(centres_table).where(
            c.table_schema == target.schema, c.table_name == target.entry.table_name, c.generation != centres.generation
        ))  # fmt: skip
        connection.execute(delete(partitions_table).where(*where, p.generation != centres.generation))
        connection.execute(update(partitions_table).where(*where, p.generation == centres.generation).values(state="current"))
    forget_cached(target.schema, target.entry.table_name)


def fit_lists(
    bind: Engine | str,
    table_name: str,
    *,
    schema: str | None = None,
    lists: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    iterations: int = DEFAULT_ITERATIONS,
    progress: Progress | None = None,
) -> ListsResult:
    """Fit partition lists on ``table_name`` (attached in columns mode) and place every row.

    ``lists`` defaults to pgvector's rule (rows / 1000 up to a million rows, their square root
    beyond); ``sample`` to 50 rows a list (at least 10,000, at most the table). Text tables get
    k-modes centres on their fingerprints, vector tables spherical k-means on their vectors;
    deterministic from the sample (chosen by a seeded hash of each key) and ``seed``. A table
    whose lists are live is refitted; one whose fit stopped halfway resumes placing it (the
    settings of the stopped fit are kept).

    Online: writers carry on, queries keep answering from the lists they had. ``ValueError``
    (nothing written) for a table without fingerprinted rows, or more lists than rows;
    ``NotAttached`` for a table simsql does not know; ``SchemaError`` for a side-table attachment.
    """
    _check_fit(lists, sample, seed)
    engine = _engine(bind)
    registry.install_when_needed(engine)
    with engine.connect() as connection:
        target = attached_target(connection, table_name, schema)
        live = live_centres(connection, target.schema, table_name)
        filling = [g for g in generations(connection, target.schema, table_name) if g.state == "filling"]
    started = time.monotonic()
    if filling:
        centres = live[-1]
        sample_rows = int(filling[-1].settings.get("sample_rows", 0))
    else:
        with engine.connect() as connection:
            values, wanted, count = _sample(connection, target, sample, lists, seed)
        if progress is not None:
            progress("sample", len(values), count)
        kind = "means" if target.vector else "modes"
        fit = fit_means if target.vector else fit_modes
        fitted = off_loop(fit, values, wanted, seed, iterations)
        added = _add_objects(engine, target) | _added(engine, target.schema, table_name)
        settings = {"seed": seed, "sample_rows": len(values), "iterations": iterations, "fit_id": uuid.uuid4().hex,
                    "config_id": target.entry.config_id, "added_column": added.column}  # fmt: skip
        centres = _store(engine, target, kind, fitted, settings, added.index or added.column)
        sample_rows = len(values)
    fitted_at = time.monotonic()
    placed = _fill(engine, target, centres, progress)
    _finish(engine, target, centres)
    placed += _place_pass(engine, target, centres, progress, placed)  # what writers with older lists left meanwhile
    apply.run_on_engine(engine, backend(engine).lists_ddl.refresh(target.schema, table_name))
    with engine.connect() as connection:
        sizes = list_sizes(connection, target.schema, table_name, target.names.part)
    return ListsResult(
        target.schema, table_name, centres.generation, centres.lists, sample_rows, placed,
        _left_behind(engine, target, [centres]), max(sizes, default=0), int(np.median(sizes)) if sizes else 0,
        fitted_at - started, time.monotonic() - fitted_at,
    )  # fmt: skip


def _check_fit(lists: int | None, sample: int | None, seed: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an int in [0, 2**64), got {seed!r}")
    if lists is not None:
        check_lists(lists)
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int) or sample < 1):
        raise ValueError(f"sample must be a positive int, got {sample!r}")


def _fill(engine: Engine, target: ListedTable, centres: Centres, progress: Progress | None) -> int:
    """The first pass and up to :data:`CATCH_UP_PASSES` more, until a pass places nothing."""
    total = _left_behind(engine, target, [centres])
    placed = _place_pass(engine, target, centres, progress, total)
    for _ in range(CATCH_UP_PASSES):
        more = _place_pass(engine, target, centres, progress, total)
        placed += more
        if not more:
            break
    return placed


def place_lists(bind: Engine | str, table_name: str, *, schema: str | None = None) -> int:
    """Place the rows no live list holds (new rows of raw SQL writers, rows whose text changed,
    rows writers placed by lists a refit replaced) in the newest live generation; returns how
    many. Backfill calls it after fingerprinting. ``NotAttached`` without fitted lists."""
    engine = _engine(bind)
    with engine.connect() as connection:
        target = attached_target(connection, table_name, schema)
        live = live_centres(connection, target.schema, table_name)
    if not live:
        raise NotAttached(f"{target.schema}.{table_name} has no partition lists: fit them first (simsql lists fit)")
    return _place_pass(engine, target, live[-1], None, 0)


def place_left_behind(bind: Engine | str, table_name: str, schema: str | None = None) -> int:
    """:func:`place_lists` when the table has live lists, else nothing (0): what backfill
    runs after filling a table with a list column."""
    engine = _engine(bind)
    with engine.connect() as connection:
        schema = schema or registry.current_schema(connection)
        if not live_centres(connection, schema, table_name):
            return 0
    return place_lists(engine, table_name, schema=schema)


def plan_drop_lists(connection: Connection, schema: str, names: Any, present: Any) -> Plan:
    """What a detach runs first for the table's lists: the list column and index when a fit
    added them (a model's own column stays), and the generations and centres recorded."""
    if not tables_exist(connection):
        return Plan()
    table_name = names.table
    plan = Plan()
    added = _added_on(connection, schema, table_name)
    if added.index or added.column:
        plan = backend(connection).lists_ddl.drop(schema, names, present, concurrently=False, column=added.column)
    params = {"schema": schema, "table": table_name}
    where = "WHERE table_schema = :schema AND table_name = :table"
    forget = [Step(f"DELETE FROM {name} {where}", f"forget the lists of {schema}.{table_name}", params)
              for name in (CENTRES_TABLE, PARTITIONS_TABLE)]  # fmt: skip
    forget_cached(schema, table_name)
    return plan + Plan(tuple(forget))


def has_lists(connection: Connection, table_name: str, schema: str) -> bool:
    """Whether ``schema.table_name`` has a generation of lists recorded (live or not)."""
    return bool(generations(connection, schema, table_name, live_only=False))


def drop_lists(bind: Engine | str, table_name: str, *, schema: str | None = None) -> bool:
    """Remove the table's lists: their generations and centres, and the list column and index
    if the fit added them (a :class:`~simsql.lists.ListsMixin` model's column is
    the model's, and stays). Returns whether there was anything to remove."""
    engine = _engine(bind)
    with engine.connect() as connection:
        schema = schema or registry.current_schema(connection)
        every = generations(connection, schema, table_name, live_only=False)
        entry = registry.read(connection, table_name, schema)
    if not every:
        return False
    added = _added(engine, schema, table_name)
    if (added.index or added.column) and entry is not None:
        with engine.connect() as connection:
            present = catalog.present(connection, schema, table_name, entry.names)
        plan = backend(engine).lists_ddl.drop(schema, entry.names, present, column=added.column)
        if plan:
            apply.run_on_engine(engine, plan, relations=[f"{schema}.{table_name}"])
    p, c = partitions_table.c, centres_table.c
    with engine.begin() as connection:
        connection.execute(delete(centres_table).where(c.table_schema == schema, c.table_name == table_name))
        connection.execute(delete(partitions_table).where(p.table_schema == schema, p.table_name == table_name))
    forget_cached(schema, table_name)
    return True


def _added(engine: Engine, schema: str, table_name: str) -> Additions:
    with engine.connect() as connection:
        return _added_on(connection, schema, table_name)


def _added_on(connection: Connection, schema: str, table_name: str) -> Additions:
    """What fits of ``schema.table_name`` added, as recorded: ``added_objects`` (the index, and
    the column when ``settings["added_column"]`` says so)."""
    if not tables_exist(connection):
        return Additions(False, False)
    p = partitions_table.c
    rows = connection.execute(
        select(p.added_objects, p.settings).where(p.table_schema == schema, p.table_name == table_name, p.added_objects.is_(True))
    ).all()
    return Additions(bool(rows), any(bool(dict(row.settings).get("added_column", True)) for row in rows))


__all__ = [
    "BATCH_ROWS",
    "attached_target",

    "ListsResult",
    "Progress",
    "drop_lists",
    "fit_lists",
    "has_lists",
    "place_left_behind",
    "place_lists",
    "plan_drop_lists",
]
