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
_SHAPES: dict[tuple[str, str | None, str], tuple[float, tuple[int, tuple[int, ...]]]] = {}
SHAPE_CACHE_SECONDS = 60.0
"""How long a query process keeps a table's number of lists and recall curve (what the lists'
step-aside reads) before asking again; a fit, refit or drop in this process forgets it at once."""
_WRITERS: dict[tuple[str, str, str], tuple[float, Centres | None]] = {}


def _bind_key(connection: Connection) -> str:
    return connection.engine.url.render_as_string(hide_password=True)


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
    for shape in [k for k in _SHAPES if k[2] == table and k[1] in (schema, None)]:
        _SHAPES.pop(shape, None)


def newest_shape(connection: Connection, schema: str | None, table: str) -> tuple[int, tuple[int, ...]]:
    """The newest live generation's number of lists and its recall curve's ``probes_at`` (empty
    without a curve; ``(0, ())`` without lists), cached for :data:`SHAPE_CACHE_SECONDS`."""
    key = (_bind_key(connection), schema, table)
    cached = _SHAPES.get(key)
    now = time.monotonic()
    if cached is not None and now - cached[0] < SHAPE_CACHE_SECONDS:
        return cached[1]
    live = generations(connection, schema or registry.current_schema(connection), table)
    curve = RecallCurve.from_settings(live[-1].settings.get("recall")) if live else None
    found = (live[-1].lists, curve.probes_at if curve is not None else ()) if live else (0, ())
    _SHAPES[key] = (now, found)
    return found


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
    (the text query's choice, made by the server from the stored centres)."""
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


def left_behind(binding: Binding, part: Any, live: Sequence[int] | None = None) -> tuple[ColumnElement[bool], ...]:
    """Rows no live list holds, as four disjoint conditions, each an index range of its own (an
    ``OR`` of them would scan the table): NULL; below the oldest live generation's values;
    above the newest's; between the two when they are not adjacent (a generation's values are
    ``[generation * LIST_SPAN, (generation + 1) * LIST_SPAN)``). Without live lists, every row
    exactly once (below ``2**31 - 1``, or that value).

    ``live``: the live generations when the caller read them already (a vector query): the bounds
    are then values the planner sees, so it estimates the ranges empty (PostgreSQL otherwise
    guesses a third of the table for each and may spend 20 ms compiling the plan with JIT);
    else they are read by the statement itself (a text query stays one statement)."""
    if live is not None:
        if not live:
            return part.is_(None), part < _INT_MAX, part == _INT_MAX
        oldest_value, newest_value = min(live), max(live)
        return (
            part.is_(None),
            part < oldest_value * LIST_SPAN,
            part > (newest_value + 1) * LIST_SPAN - 1,
            and_(part > (oldest_value + 1) * LIST_SPAN - 1, part < newest_value * LIST_SPAN),
        )
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
    "in_lists",
    "left_behind",
    "live_centres",
    "newest_shape",
    "load_centres",
    "part_column",
    "probed_lists",
    "recalled_probes",
    "schema_expression",
    "tables_exist",
    "writer_centres",
]
