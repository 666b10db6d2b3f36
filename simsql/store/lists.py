"""A table's partition lists as stored: its live generations of centres, read and cached, and
the SQL by which a text query picks the lists it probes.

A generation is *live* while it is ``filling`` (rows are moving into its lists; the one it
replaces is still probed) or ``current``. A row's list value belongs to a live generation, or it
is *left behind*: NULL (never placed, or its fingerprint changed since) or the value of a
generation no longer live. Every query reads the rows left behind as well as its probed lists,
so no row is ever out of reach, whatever writers, refits or a ``kill -9`` left; placing them
(:func:`simsql.lists.place_lists`, backfill) only makes queries cheaper again.
"""

from __future__ import annotations

import base64
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Select, and_, func, literal, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql import ColumnElement

from ..dialects import CurrentSchema, hamming_expression
from ..schema.names import CENTRES_TABLE, PARTITIONS_TABLE, centres_table, partitions_table
from ..text.lists import LIST_SPAN, Centres, Kind, RecallCurve
from . import registry
from .storage import Binding

LIVE_STATES = ("filling", "current")
WRITER_CACHE_SECONDS = 5.0
"""How long an ORM writer keeps the newest live generation before asking again. A writer that
places a row by a generation replaced meanwhile leaves it behind (still read by every query);
the refit's last pass and backfill place it."""

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
"""The list column is a 32-bit integer."""


@dataclass(frozen=True)
class Generation:
    """One row of ``simsql_partitions``."""

    generation: int
    state: str
    kind: Kind
    lists: int
    settings: dict[str, Any]

    @property
    def fit_id(self) -> str:
        return str(self.settings.get("fit_id", ""))


_CENTRES: dict[tuple[str, str, str, int, str], Centres] = {}
_WRITERS: dict[tuple[str, str, str], tuple[float, Centres | None]] = {}


_BIND_KEYS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
"""Each engine's URL as the caches above key it (rendered once: an ORM writer asks for every row)."""


def _bind_key(connection: Connection) -> str:
    engine = connection.engine
    key = _BIND_KEYS.get(engine)
    if key is None:
        key = _BIND_KEYS[engine] = engine.url.render_as_string(hide_password=True)
    return key


def tables_exist(connection: Connection) -> bool:
    return registry.installed(connection)


def generations(connection: Connection, schema: str, table: str, *, live_only: bool = True) -> list[Generation]:
    """The table's generations, oldest first (live ones only unless ``live_only=False``)."""
    if not tables_exist(connection):
        return []
    query = select(partitions_table).where(partitions_table.c.table_schema == schema, partitions_table.c.table_name == table)
    if live_only:
        query = query.where(partitions_table.c.state.in_(LIVE_STATES))
    rows = connection.execute(query.order_by(partitions_table.c.generation)).all()
    return [Generation(r.generation, r.state, r.kind, r.lists, dict(r.settings)) for r in rows]


def load_centres(connection: Connection, schema: str, table: str, generation: Generation) -> Centres:
    """The centres of ``generation`` (cached: a generation's centres never change once written)."""
    key = (_bind_key(connection), schema, table, generation.generation, generation.fit_id)
    cached = _CENTRES.get(key)
    if cached is not None:
        return cached
    c = centres_table.c
    rows = connection.execute(
        select(c.list_value, c.centre, c.vector)
        .where(c.table_schema == schema, c.table_name == table, c.generation == generation.generation)
        .order_by(c.list_value)
    ).all()
    if generation.kind == "modes":
        values = np.array([int(r.centre) & 0xFFFFFFFFFFFFFFFF for r in rows], dtype=np.uint64)
    else:
        values = np.stack([decode_centre(r.vector) for r in rows])
    found = Centres(generation.generation, generation.kind, values)
    if rows:  # none: the generation was dropped since it was read (a query then probes none of it)
        _CENTRES[key] = found
    return found


def encode_centre(vector: Any) -> str:
    """A vector centre as stored: the base64 text of its little-endian float64 values (exact)."""
    return base64.b64encode(np.asarray(vector, dtype="<f8").tobytes()).decode("ascii")


def decode_centre(stored: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(stored), dtype="<f8")


def live_centres(connection: Connection, schema: str, table: str) -> list[Centres]:
    """The centres of every live generation, oldest first: what a query probes."""
    return [load_centres(connection, schema, table, g) for g in generations(connection, schema, table)]


def writer_centres(connection: Connection, schema: str | None, table: str) -> Centres | None:
    """The newest live generation, where ORM writers place rows (None: no lists fitted), asked
    of the database at most every :data:`WRITER_CACHE_SECONDS`: a write costs no statement of
    its own in between. ``schema`` None: the connection's current schema (resolved on a miss)."""
    key = (_bind_key(connection), schema or "", table)
    cached = _WRITERS.get(key)
    now = time.monotonic()
    if cached is not None and now - cached[0] < WRITER_CACHE_SECONDS:
        return cached[1]
    live = live_centres(connection, schema or registry.current_schema(connection), table)
    newest = live[-1] if live else None
    _WRITERS[key] = (now, newest)
    return newest


def forget_cached(schema: str, table: str) -> None:
    """Drop what this process cached of ``schema.table``'s lists (after a fit, a refit or a drop)."""
    for key in [k for k in _WRITERS if k[2] == table and k[1] in (schema, "")]:
        del _WRITERS[key]


def part_column(binding: Binding) -> Any:
    """The list column of a bound table, or None when it has no partition lists."""
    return binding.table.c.get(binding.names.part)


def schema_expression(binding: Binding) -> ColumnElement[str]:
    """The schema the registry records the bound table under, as SQL (the model's own, else the
    connection's current one)."""
    schema, _ = binding.registry_key
    return literal(schema) if schema is not None else CurrentSchema()


def _live_of(binding: Binding) -> Select[Any]:
    p = partitions_table.c
    _, table = binding.registry_key
    return select(p.generation).where(
        p.table_schema == schema_expression(binding), p.table_name == table, p.state.in_(LIVE_STATES)
    )


def probed_lists(binding: Binding, fingerprint: ColumnElement[Any], probes: ColumnElement[Any]) -> Select[Any]:
    """The list values of the ``probes`` lists of each live generation nearest ``fingerprint``
    (the text query's choice, made by the server from the stored centres, in a statement
    compiled without a connection; a statement run through an engine is sent with the lists
    chosen in Python instead, :func:`chosen_lists`)."""
    c = centres_table.c
    _, table = binding.registry_key
    distance = hamming_expression(c.centre, fingerprint)
    rank = func.row_number().over(partition_by=c.generation, order_by=(distance, c.list_value)).label("simsql_rank")
    ranked = (
        select(c.list_value, rank)
        .where(c.table_schema == schema_expression(binding), c.table_name == table, c.generation.in_(_live_of(binding)))
        .subquery("simsql_lists")
    )
    return select(ranked.c.list_value).where(ranked.c.simsql_rank <= probes)


def recalled_probes(binding: Binding, percent: int) -> ColumnElement[Any]:
    """The probes a query asking ``percent`` percent recall reads, chosen in SQL from the curve
    the newest live generation's fit measured (:class:`simsql.text.lists.RecallCurve`); every
    list (an exact answer through the lists) where no curve was recorded."""
    p = partitions_table.c
    _, table = binding.registry_key
    chosen = p.settings[("recall", "probes_at", percent)].as_integer()
    newest = (
        select(chosen)
        .where(p.table_schema == schema_expression(binding), p.table_name == table, p.state.in_(LIVE_STATES))
        .order_by(p.generation.desc())
        .limit(1)
        .scalar_subquery()
    )
    return func.coalesce(newest, LIST_SPAN)


def live_bounds(live: Sequence[int]) -> tuple[int, int, int, int]:
    """The four bounds of :func:`left_behind`'s ranges for the live generations ``live``:
    ``(below, above, gap_above, gap_below)``: rows left behind are NULL, ``< below``,
    ``> above``, or ``> gap_above and < gap_below`` (between the oldest and the newest live
    generation when they are not adjacent; an empty range otherwise). Without live lists, every
    row exactly once: below ``2**31 - 1``, or above ``2**31 - 2``."""
    if not live:
        return _INT_MAX, _INT_MAX - 1, _INT_MAX, _INT_MIN
    oldest, newest = min(live), max(live)
    return oldest * LIST_SPAN, (newest + 1) * LIST_SPAN - 1, (oldest + 1) * LIST_SPAN - 1, newest * LIST_SPAN


def left_behind(binding: Binding, part: Any, live: Sequence[int] | None = None, bounds: Sequence[Any] | None = None) -> tuple[ColumnElement[bool], ...]:
    """Rows no live list holds, as four disjoint conditions, each an index range of its own (an
    ``OR`` of them would scan the table): NULL; below the oldest live generation's values;
    above the newest's; between the two when they are not adjacent (a generation's values are
    ``[generation * LIST_SPAN, (generation + 1) * LIST_SPAN)``). Without live lists, every row
    exactly once (below ``2**31 - 1``, or that value).

    ``live``: the live generations when the caller read them already: the bounds
    (:func:`live_bounds`) are then values the planner sees, so it estimates the ranges empty
    (PostgreSQL otherwise guesses a third of the table for each and may spend 20 ms compiling
    the plan with JIT). ``bounds``: those four bounds as the caller binds them (a text query's
    bound parameters, so its compiled SQL is reused). Neither: read by the statement itself
    (the text query's statement as compiled without a connection: one statement)."""
    if bounds is None and live is not None:
        bounds = live_bounds(live)
    if bounds is not None:
        below, above, gap_above, gap_below = bounds
        return part.is_(None), part < below, part > above, and_(part > gap_above, part < gap_below)
    p = partitions_table.c
    _, table = binding.registry_key
    where = (p.table_schema == schema_expression(binding), p.table_name == table, p.state.in_(LIVE_STATES))
    oldest = select(func.min(p.generation)).where(*where).scalar_subquery()
    newest = select(func.max(p.generation)).where(*where).scalar_subquery()
    low = func.coalesce(oldest * LIST_SPAN, _INT_MAX)
    high = func.coalesce((newest + 1) * LIST_SPAN - 1, _INT_MAX - 1)
    return (
        part.is_(None),
        part < low,
        part > high,
        and_(part > func.coalesce((oldest + 1) * LIST_SPAN - 1, _INT_MAX), part < func.coalesce(newest * LIST_SPAN, _INT_MIN)),
    )


_LIVE_QUERIES: weakref.WeakKeyDictionary[type, Select[Any]] = weakref.WeakKeyDictionary()
"""The statement :func:`live_of_query` sends, built once a model (its values never change)."""


def live_of_query(connection: Connection, binding: Binding) -> tuple[str, list[Generation]]:
    """The schema the registry records the bound table under and its live generations, oldest
    first, read by one statement on the query's own connection (in its transaction) and never
    kept: a fit, refit or drop by another connection is seen by the next query. What a text
    query chooses its lists from (:func:`chosen_lists`); their centres are cached by
    generation and fit (:func:`load_centres`), which never change once written."""
    query = _LIVE_QUERIES.get(binding.model)
    if query is None:
        p = partitions_table.c
        _, table = binding.registry_key
        query = (
            select(p.table_schema, p.generation, p.state, p.kind, p.lists, p.settings)
            .where(p.table_schema == schema_expression(binding), p.table_name == table, p.state.in_(LIVE_STATES))
            .order_by(p.generation)
        )
        _LIVE_QUERIES[binding.model] = query  # type: ignore[assignment]
    rows = connection.execute(query).all()
    schema = rows[0].table_schema if rows else ""
    return schema, [Generation(r.generation, r.state, r.kind, r.lists, dict(r.settings)) for r in rows]


def probes_wanted(live: Sequence[Generation], probes: int | None, percent: int | None) -> int:
    """The lists a query probes in each live generation: ``probes`` as asked, or the fewest
    whose recall reaches ``percent`` on the curve the newest generation's fit measured
    (:class:`simsql.text.lists.RecallCurve`); every list (an exact answer through the lists)
    where no curve was recorded."""
    if probes is not None:
        return probes
    curve = RecallCurve.from_settings(live[-1].settings.get("recall")) if live else None
    if curve is None or percent is None:
        return LIST_SPAN
    return curve.probes_at[percent]


def chosen_lists(connection: Connection, schema: str, table: str, live: Sequence[Generation], fingerprint: int, probes: int) -> list[int]:
    """The list values of the ``probes`` lists of each live generation nearest ``fingerprint``
    (a signed or unsigned 64-bit fingerprint), nearest first, lowest list on ties: the choice
    :func:`probed_lists` makes in SQL, made in Python from the cached centres."""
    target = fingerprint & 0xFFFFFFFFFFFFFFFF
    return [value for g in live for value in load_centres(connection, schema, table, g).nearest(target, probes)]


def in_lists(part: Any, values: Sequence[int]) -> ColumnElement[bool]:
    """``part IN (values)`` for a vector query's lists, chosen in Python."""
    return and_(part.in_([int(v) for v in values]))


__all__ = [
    "CENTRES_TABLE",
    "Generation",
    "LIVE_STATES",
    "PARTITIONS_TABLE",
    "WRITER_CACHE_SECONDS",
    "decode_centre",
    "encode_centre",
    "forget_cached",
    "generations",
    "chosen_lists",
    "in_lists",
    "left_behind",
    "live_bounds",
    "live_of_query",
    "live_centres",
    "load_centres",
    "part_column",
    "probed_lists",
    "probes_wanted",
    "recalled_probes",
    "schema_expression",
    "tables_exist",
    "writer_centres",
]
