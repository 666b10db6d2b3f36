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
from dataclasses import dataclass
from typing import Any

import numpy as np
import xxhash
from sqlalchemy import Engine, delete, func, insert, select, tuple_, update
from sqlalchemy.engine import Connection

from ..dialects import backend
from ..dialects.ddl_plan import DDLPlan, Step
from ..schema.names import CENTRES_TABLE, PARTITIONS_TABLE, centres_table, partitions_table
from ..schema.urls import engine_for
from ..store import registry
from ..store.awaiting import off_loop
from ..store.lists import encode_centre, forget_cached, generations, live_centres, tables_exist
from ..store.progress import Progress
from ..text.bits import to_signed
from ..text.errors import NotAttached, SchemaError, WouldLockTable
from ..text.lists import (
    DEFAULT_ITERATIONS,
    LIST_SPAN,
    MAX_GENERATION,
    Centres,
    RecallCurve,
    check_lists,
    default_lists,
    default_sample,
    fit_means,
    fit_modes,
    recall_curve,
    recall_queries,
)
from ..text.vectors import vector_of
from . import apply, catalog
from .lists_place import (
    BATCH_ROWS,
    ListedTable,
    attached_target,
    fill,
    index_sizes,
    left_behind_rows,
    place_pass,
    rebuild_grown,
)
from .lists_status import list_sizes


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
    rebuilt: tuple[str, ...] = ()
    """The indexes the fit's writes had grown, rebuilt online at its end (PostgreSQL)."""
    recall: RecallCurve | None = None
    """Recall@10 against probes, measured on held-out rows of the table (text lists)."""


@dataclass(frozen=True)
class Additions:
    """What a fit added to the table (a detach or a drop removes exactly that)."""

    index: bool
    column: bool

    def __or__(self, other: Additions) -> Additions:
        return Additions(self.index or other.index, self.column or other.column)


def _engine(bind: Engine | str) -> Engine:
    return engine_for(bind) if isinstance(bind, str) else bind


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


@dataclass(frozen=True)
class Sample:
    """What a fit reads of the table: the rows its centres are fitted on (unsigned fingerprints,
    or vectors), the lists wanted, and for text every fingerprint with the held-out rows whose
    neighbours measure the recall curve."""

    values: Any
    lists: int
    rows: int
    fingerprints: np.ndarray | None = None
    held_out: np.ndarray | None = None


def _sample(connection: Connection, target: ListedTable, sample: int | None, lists: int | None, seed: int) -> Sample:
    """The rows whose seeded hash of their key is smallest, so the sample depends on the table's
    keys and the seed alone, not on the order rows are read; the next
    :func:`~simsql.text.lists.recall_queries` in that order are held out (from the sample itself
    when it holds the whole table)."""
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
        from_db = backend(connection).fingerprint_from_db
        every = np.array([from_db(r[-1]) for r in rows], dtype=np.uint64)
        queries = recall_queries(count)
        held = order[size : size + queries] if count - size >= queries else order[:queries]
        return Sample(every[chosen], wanted, count, every, np.array(sorted(held), dtype=np.int64))
    vectors = []
    source = t.c[target.entry.source[0]]
    picked = [tuple(rows[i][: len(keys)]) for i in chosen]
    for start in range(0, len(picked), 1000):
        part = picked[start : start + 1000]
        vectors += [vector_of(r[0], target.entry.source[0]) for r in connection.execute(
            select(source).where(tuple_(*keys).in_(part) if len(keys) > 1 else keys[0].in_([p[0] for p in part]))
        )]  # fmt: skip
    return Sample(np.stack([np.asarray(v, dtype=np.float64) for v in vectors]), wanted, count)


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
    deterministic from the sample (chosen by a seeded hash of each key) and ``seed``. A text
    fit also measures recall@10 against probes on held-out rows of the table (exact top-10 by
    brute force) and records the curve with the generation: what ``most_similar(...,
    recall=...)`` reads. A table whose lists are live is refitted; one whose fit stopped halfway
    resumes placing it (the settings of the stopped fit are kept). ``progress(phase, done,
    total)`` is called once the ``"sample"`` is read, after each batch of rows placed
    (``"place"``) and after each grown index rebuilt (``"rebuild"``).

    Online, and without collateral: writers carry on, queries keep answering from the lists
    they had, and the indexes the fit's writes grew are rebuilt online at its end
    (:mod:`simsql.lifecycle.lists_place`). ``ValueError`` (nothing written) for a table without
    fingerprinted rows, or more lists than rows; ``NotAttached`` for a table simsql does not
    know; ``SchemaError`` for a side-table attachment.
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
        centres, settings = live[-1], filling[-1].settings
    else:
        centres, settings = _fit_new(engine, target, sample, lists, seed, iterations, progress)
    fitted_at = time.monotonic()
    placed = fill(engine, target, centres, progress)
    _finish(engine, target, centres)
    placed += place_pass(engine, target, centres, progress, placed)  # what writers with older lists left meanwhile
    rebuilt = rebuild_grown(engine, target, dict(settings.get("index_bytes", {})), progress)
    apply.run_on_engine(engine, backend(engine).lists_ddl.refresh(target.schema, table_name))  # after: the indexes it cleans are small
    with engine.connect() as connection:
        sizes = list_sizes(connection, target.schema, table_name, target.names.part)
    return ListsResult(
        target.schema, table_name, centres.generation, centres.lists, int(settings.get("sample_rows", 0)), placed,
        left_behind_rows(engine, target, [centres]), max(sizes, default=0), int(np.median(sizes)) if sizes else 0,
        fitted_at - started, time.monotonic() - fitted_at, tuple(rebuilt), RecallCurve.from_settings(settings.get("recall")),
    )  # fmt: skip


def _fit_new(
    engine: Engine, target: ListedTable, sample: int | None, lists: int | None, seed: int, iterations: int,
    progress: Progress | None,
) -> tuple[Centres, dict[str, Any]]:  # fmt: skip
    """A new generation: sampled, fitted, its recall measured, recorded ``filling``."""
    with engine.connect() as connection:
        read = _sample(connection, target, sample, lists, seed)
    if progress is not None:
        progress("sample", len(read.values), read.rows)
    fitted = off_loop(fit_means if target.vector else fit_modes, read.values, read.lists, seed, iterations)
    curve = None
    if read.fingerprints is not None and read.held_out is not None:
        curve = off_loop(recall_curve, read.fingerprints, read.held_out, fitted)
    added = _add_objects(engine, target) | _added(engine, target.schema, target.entry.table_name)
    settings = {"seed": seed, "sample_rows": len(read.values), "iterations": iterations, "fit_id": uuid.uuid4().hex,
                "config_id": target.entry.config_id, "added_column": added.column,
                "index_bytes": index_sizes(engine, target)}  # fmt: skip
    if curve is not None:
        settings["recall"] = curve.as_settings()
    kind = "means" if target.vector else "modes"
    return _store(engine, target, kind, fitted, settings, added.index or added.column), settings


def _check_fit(lists: int | None, sample: int | None, seed: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an int in [0, 2**64), got {seed!r}")
    if lists is not None:
        check_lists(lists)
    if sample is not None and (isinstance(sample, bool) or not isinstance(sample, int) or sample < 1):
        raise ValueError(f"sample must be a positive int, got {sample!r}")


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
    return place_pass(engine, target, live[-1], None, 0)


def place_left_behind(bind: Engine | str, table_name: str, schema: str | None = None) -> int:
    """:func:`place_lists` when the table has live lists, else nothing (0): what backfill
    runs after filling a table with a list column."""
    engine = _engine(bind)
    with engine.connect() as connection:
        schema = schema or registry.current_schema(connection)
        if not live_centres(connection, schema, table_name):
            return 0
    return place_lists(engine, table_name, schema=schema)


def plan_drop_lists(connection: Connection, schema: str, names: Any, present: Any) -> DDLPlan:
    """What a detach runs first for the table's lists: the list column and index when a fit
    added them (a model's own column stays), and the generations and centres recorded."""
    if not tables_exist(connection):
        return DDLPlan()
    table_name = names.table
    plan = DDLPlan()
    added = _added_on(connection, schema, table_name)
    if added.index or added.column:
        plan = backend(connection).lists_ddl.drop(schema, names, present, concurrently=False, column=added.column)
    params = {"schema": schema, "table": table_name}
    where = "WHERE table_schema = :schema AND table_name = :table"
    forget = [Step(f"DELETE FROM {name} {where}", f"forget the lists of {schema}.{table_name}", params)
              for name in (CENTRES_TABLE, PARTITIONS_TABLE)]  # fmt: skip
    forget_cached(schema, table_name)
    return plan + DDLPlan(tuple(forget))


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
    "drop_lists",
    "fit_lists",
    "has_lists",
    "place_left_behind",
    "place_lists",
    "plan_drop_lists",
]
