"""The originality check's index stage on tables with the wide signature (``wide=True``).

One statement: margin-directed probes of the block indexes (20 bits each by default: the
attachment's layout, :attr:`simsql.schema.names.Names.layout`) (:func:`simsql.text.signature.probes`:
each block's own value, then variants flipping its least confident bits, cheapest first, within
``budget`` lookups), united into one set of candidate keys, then the full 256-bit Hamming
distance (``bit_count`` of the XOR of each word) computed and filtered inside the database,
nearest first, before any text is read. No scan of the table: the candidates are the rows some
probe reaches, whatever the table's size.

Guaranteed: every row within ``layout.count - 1`` bits (7 for 8 x 20) of the target, among the
bits the blocks cover (160 for 8 x 20), shares a block value with it (pigeonhole), so it is a candidate; rows
farther out are found when the bits that differ in one of their blocks are among those the
probes flip.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import Integer, Select, bindparam, inspect, literal, select, union
from sqlalchemy.orm import aliased
from sqlalchemy.sql import ColumnElement

from ..dialects import equals_any, hamming_expression, probe_parameter
from ..schema.names import WIDE_LAYOUT
from ..store.storage import Binding, binding_for
from ..store.types import SimHash
from ..text.errors import NotAttached
from ..text.signature import WIDE_BITS, WIDE_WORDS, BlockLayout, Signature, probe_values
from .targets import keys_equal

WIDE_DISTANCE = 96
"""Default bound on the 256-bit distance of a candidate. Unrelated texts differ in about half
of the 256 bits (about 128, with a spread of about 8 on balanced bits); light evasions of a
text stay far below (BENCHMARKS.md, ``python -m benchmarks.originality``). Candidates are then
confirmed by their text, so the bound only spares the database rows no copy is."""

WIDE_BUDGET = 512
"""Default number of block lookups (each block's own value, then the cheapest variants) for a
text of at least :data:`WIDE_BUDGET_FEATURES` distinct features, and the least any text gets
(:func:`probe_budget`). Measured on man pages (``python -m benchmarks.originality``): 48
probes reach 90-95% of disguised copies (header and footer, shuffled lines with 1%
substitutions), 512 all but a few short ones; the lookups are index probes, the rows they
return few (BENCHMARKS.md)."""

WIDE_BUDGET_FEATURES = 500
"""A submission with fewer distinct features than this gets proportionally more probes:
``WIDE_BUDGET * WIDE_BUDGET_FEATURES / features``, up to :data:`WIDE_MAX_BUDGET`."""

WIDE_MAX_BUDGET = 2048
"""The most probes :func:`probe_budget` gives a short text (4 x :data:`WIDE_BUDGET`)."""


CENTRED_BUDGET_SCALE = 2
"""How many times the probes a table whose whole signature is centred on its own text (a wide
background: ``simsql.fit_background`` on a wide table) gets. Balanced bits make each probe's
block value hold about as many rows as chance puts there (a tenth of what leaning bits crowd
into it on documentation prose), and make a copy's blocks differ from its original's a little
more often; twice the probes reach more disguised copies than today's budget on leaning bits,
for about a fifth of the rows read (BENCHMARKS.md, "A wide background")."""


def is_centred(binding: Binding) -> bool:
    """Whether ``binding``'s whole wide signature is centred on a background (its words 1-3 too)."""
    background = getattr(binding.fingerprinter, "background", None)
    return background is not None and background.wide


WIDER_BUDGET_SCALE = 2
"""How many times the probes a table whose wide blocks are wider than :data:`WIDE_LAYOUT`'s 20
bits gets (on top of :data:`CENTRED_BUDGET_SCALE`). A copy's block equals its original's only
when none of its bits flipped, and a wider block has more bits to flip, so the same budget
reaches fewer copies: measured without a database on 4,500 light copies (man pages and held-out
Debian manuals, English and Chinese, centred; BENCHMARKS.md, "Wider blocks on large tables"),
10 x 24 left 17 unreached at the centred budget and 4 at twice it (8 x 20: 0), 10 x 22 6 and 1.
Each probe of a 24-bit block reads about a sixteenth of the rows a 20-bit one does, so twice
the probes still read about an eighth: built, 293 rows p50 for a fresh article at 1M against
2,225, in about the same time there (the extra index descents cost what the rows saved); the rows
term is the one that grows with the table (BENCHMARKS.md, "Wider blocks, built")."""


def layout_budget_scale(layout: BlockLayout) -> int:
    """:data:`WIDER_BUDGET_SCALE` for blocks wider than :data:`WIDE_LAYOUT`'s, else 1."""
    return WIDER_BUDGET_SCALE if layout.width > WIDE_LAYOUT.width else 1


def table_budget(binding: Binding, signature: Signature) -> int:
    """:func:`probe_budget` of ``signature`` on ``binding``'s table: centred or not, its layout."""
    return probe_budget(signature, is_centred(binding), binding.names.layout)


def probe_budget(signature: Signature, centred: bool = False, layout: BlockLayout = WIDE_LAYOUT) -> int:
    """How many block lookups the originality check makes for ``signature`` by default.

    Why it depends on the text: a copier's edits have a size of their own (a header and a
    footer, a sentence inserted), and a bit's margin is a share of the text's whole weight, so
    the same edit flips more bits of a text of few features. Copies of short texts then differ
    from their original in more bits of each block, and only deeper probes reach them. The
    budget grows in inverse proportion to the submission's distinct features below
    :data:`WIDE_BUDGET_FEATURES`, between :data:`WIDE_BUDGET` and :data:`WIDE_MAX_BUDGET`; a
    signature whose feature count is not known (``features == 0``) gets :data:`WIDE_BUDGET`.
    Chosen on man pages and checked on a held-out source (BENCHMARKS.md, "The probe budget",
    ``python -m benchmarks.probe_budget``): on held-out Chinese sections it took the light
    evasions the 512 probes missed from 16 of 900 to 4. New texts pay for it: 1.4x the probes
    for fresh Chinese articles, 2.3x for English ones (short in features too), 1.35x the time
    at 1M rows. ``centred``: the table's whole signature is centred (:func:`is_centred`), which
    multiplies the budget by :data:`CENTRED_BUDGET_SCALE`; ``layout``: the table's blocks, wider
    ones multiply it by :func:`layout_budget_scale`.
    """
    scale = (CENTRED_BUDGET_SCALE if centred else 1) * layout_budget_scale(layout)
    if signature.features <= 0:
        return WIDE_BUDGET * scale
    scaled = -(-WIDE_BUDGET * WIDE_BUDGET_FEATURES // signature.features)  # ceiling division
    return max(WIDE_BUDGET, min(WIDE_MAX_BUDGET, scaled)) * scale


WIDE_FIRST_STAGE = 64
"""Probes :func:`simsql.find_original` makes first (each block's own value and the cheapest
variants), reading the text of their :data:`WIDE_FIRST_CANDIDATES` nearest candidates; the
whole budget only when none of those is confirmed. Most disguised copies share one of these
values with their original (BENCHMARKS.md), so a copy costs 64 index lookups and one text, and
a new text one statement more than the whole budget alone."""

WIDE_FIRST_CANDIDATES = 4
"""How many of the first stage's nearest candidates the check reads the text of."""

WIDE_CANDIDATES = 16
"""How many of the nearest candidates (by 256-bit distance) the check reads the text of."""


def wide_binding(model: type) -> Binding:
    """The binding of ``model``, refused with :class:`NotAttached` unless it has the wide signature."""
    binding = binding_for(model)
    if not binding.words:
        raise NotAttached(
            f"{model.__name__} has no wide signature: declare it with simsql.WideSimHashMixin or "
            f"simsql.attach_model(..., wide=True)"
        )
    return binding


def wide_distance(
    binding: Binding, signature: Signature | Sequence[ColumnElement[Any]], columns: Sequence[ColumnElement[Any]] | None = None
) -> ColumnElement[Any]:
    """The 256-bit Hamming distance of each row's signature to ``signature`` (or to four word
    parameters), in SQL (NULL for a row without one): of ``binding``'s word columns, or of
    ``columns`` (the same four words read through a subquery)."""
    words = [literal(word, SimHash()) for word in signature.words] if isinstance(signature, Signature) else signature
    terms = [hamming_expression(column, word) for column, word in zip(binding.words if columns is None else columns, words)]
    total: ColumnElement[Any] = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


def probe_groups(signature: Signature, budget: int, start: int = 0, layout: BlockLayout = WIDE_LAYOUT) -> dict[int, list[int]]:
    """Block number -> the values probed in it, from the ``budget`` cheapest probes of the blocks
    of ``layout`` (the table's: ``binding.names.layout``) (those from the ``start``-th on: a
    later stage of :func:`simsql.queries.wide_original.find_wide_original`)."""
    groups: defaultdict[int, list[int]] = defaultdict(list)
    for block, value in probe_values(signature, layout, budget=budget)[start:]:
        groups[block].append(value)
    return dict(groups)


def wide_statement(model: type, limit: int) -> Select[Any]:
    """The index stage for ``model`` as one statement built once (and compiled once, and
    prepared by the driver once it repeats): ``(Model, distance)`` of the nearest ``limit`` rows
    within the bound that the probed block values reach, nearest first (ties by key). Its
    parameters are :func:`wide_parameters`. Candidates and their distances come from the block
    indexes alone (they cover the words and the key: one index-only lookup per block, its
    probed values in one array); only the nearest ``limit`` rows are joined back to the table.
    The model is read through the alias ``wide_row``: a condition on the model's
    own columns added to the statement would name another copy of its table, so filter on its
    result instead. Kept per binding: a model attached again gets a statement of its new columns."""
    return _statement(model, wide_binding(model), limit)


@lru_cache(maxsize=64)
def _statement(model: type, binding: Binding, limit: int) -> Select[Any]:
    row, keys = _row(model, binding)
    return _joined(binding, row, keys, limit, row)


def wide_text_statement(model: type, limit: int) -> Select[Any]:
    """:func:`wide_statement` reading only what the confirmation needs: ``(key..., source
    column..., distance)`` of the nearest ``limit`` rows (keys in :attr:`Binding.keys` order,
    sources in :attr:`Binding.source` order), nearest first (ties by key). Building a whole ORM
    instance per candidate took about half of the statement's client CPU for 16 candidates, almost
    all turned away; the one confirmed is then read whole by its key (the first stage's few
    candidates are read whole at once: :func:`simsql.queries.wide_original.find_wide_original`).
    The same parameters."""
    return _text_statement(model, wide_binding(model), limit)


@lru_cache(maxsize=64)
def _text_statement(model: type, binding: Binding, limit: int) -> Select[Any]:
    row, keys = _row(model, binding)
    return _joined(binding, row, keys, limit, *keys, *(getattr(row, name) for name in binding.source))


def _joined(binding: Binding, row: Any, keys: list[Any], limit: int, *selected: Any) -> Select[Any]:
    """``(selected..., distance)`` of the nearest ``limit`` candidates of :func:`_nearest`, joined
    back to ``row`` (the model's alias) by ``keys``, nearest first (ties by key): the one join
    both the whole-row and the text statements make."""
    nearest = _nearest(binding, limit).subquery("wide_nearest")
    # LIMIT again outside: MySQL and MariaDB drop an ORDER BY inside a derived table
    return (
        select(*selected, nearest.c.distance)
        .join_from(row, nearest, keys_equal(keys, [nearest.c[key.name] for key in binding.table_keys]))
        .order_by(nearest.c.distance, *keys)
        .limit(limit)
    )


def _row(model: type, binding: Binding) -> tuple[Any, list[Any]]:
    """``model`` under the short alias ``wide_row``, and its key attributes (in :attr:`Binding.keys`
    order): its columns are named by the alias rather than by schema and table, which keeps the
    statements under the length psycopg caches their parsing up to (issue 43)."""
    row: Any = aliased(model, name="wide_row")
    mapper: Any = inspect(model)
    return row, [getattr(row, mapper.get_property_by_column(key).key) for key in binding.keys]


def wide_keys_statement(model: type, limit: int) -> Select[Any]:
    """:func:`wide_statement` without the join to the rows: ``(key..., distance)`` of the nearest
    ``limit`` rows, nearest first (ties by key), from the block indexes alone, for a caller that
    reads the rows by key itself (:attr:`simsql.dialects.Backend.rows_by_key`). The same
    parameters."""
    return _nearest(wide_binding(model), limit)


@lru_cache(maxsize=64)
def _nearest(binding: Binding, limit: int) -> Select[Any]:
    # Each branch reads what its block index covers (key and words) under a short alias; the
    # distance is written once, over the union (wide_scored, which the servers merge into the
    # query), and its bound on it: PostgreSQL 15, MySQL 9 (8.0.29+ pushes into a union) and
    # MariaDB 10.11 push that filter into every branch's index-only scan (their plans, issue 43).
    # Written in every branch, twice (select list and filter) and on columns qualified by schema
    # and table, the statement grew past the 4,096 bytes up to which psycopg caches its parsing
    # (tests/test_wide_queries.py).
    row = binding.table.alias("w")
    read = [row.c[column.key] for column in (*binding.table_keys, *binding.words)]
    branches = [
        select(*read).where(equals_any(row.c[column.key], probe_parameter((), f"simsql_v{block}")))
        for block, column in enumerate(binding.wide_blocks)
    ]
    candidates = union(*branches).subquery("wide_candidates")
    words = [bindparam(f"simsql_w{k}", type_=SimHash()) for k in range(WIDE_WORDS)]
    distance = wide_distance(binding, words, [candidates.c[word.name] for word in binding.words])
    scored = select(*(candidates.c[key.name] for key in binding.table_keys), distance.label("distance")).subquery("wide_scored")
    bound = bindparam("simsql_bound", type_=Integer())
    return (
        select(scored)
        .where(binding.guard(scored.c.distance <= bound))  # guarded: the statement checks the table's configuration and block layout before it runs
        .order_by(scored.c.distance, *(scored.c[key.name] for key in binding.table_keys))
        .limit(limit)
    )


def wide_parameters(
    signature: Signature, max_distance: int, groups: dict[int, list[int]], layout: BlockLayout = WIDE_LAYOUT
) -> dict[str, Any]:
    """The execution parameters of :func:`wide_statement`: the four words, the bound, and the
    values probed in each block of ``layout`` (the table's; ``groups``, from :func:`probe_groups`;
    a block left out probes nothing)."""
    if isinstance(max_distance, bool) or not isinstance(max_distance, int) or not 0 <= max_distance <= WIDE_BITS:
        raise ValueError(f"max_distance must be an int in 0..{WIDE_BITS}, got {max_distance!r}")
    parameters: dict[str, Any] = {f"simsql_w{k}": word for k, word in enumerate(signature.words)}
    parameters.update({f"simsql_v{block}": groups.get(block, []) for block in range(layout.count)})
    parameters["simsql_bound"] = max_distance
    return parameters


def wide_search(
    model: type, signature: Signature, max_distance: int = WIDE_DISTANCE, *,
    budget: int | None = None, limit: int = WIDE_CANDIDATES,
) -> Select[Any]:  # fmt: skip
    """``(Model, distance)`` of the nearest ``limit`` rows within ``max_distance`` of the 256
    bits of ``signature`` that one of the ``budget`` cheapest block probes reaches (None: the
    text's own :func:`probe_budget` on this table), nearest first (ties by key):
    :func:`wide_statement` with its parameters bound."""
    binding = wide_binding(model)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive int, got {limit!r}")
    layout = binding.names.layout
    budget = table_budget(binding, signature) if budget is None else budget
    parameters = wide_parameters(signature, max_distance, probe_groups(signature, budget, 0, layout), layout)
    return wide_statement(model, limit).params(parameters)
