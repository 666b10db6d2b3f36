"""Ranking through partition lists (:mod:`simsql.text.lists`): the rows of the lists nearest
the target, and every row left behind, by Hamming distance.

Branches under one ``UNION ALL``, each an index-only scan of the list index (it covers the
list, the signature words and the key), each ranked and cut to the limit where it is read: the
rows of the probed lists (one scan for all of them, :class:`simsql.dialects.InSelected`), and
the rows no live list holds (:func:`simsql.store.lists.left_behind`). A plain ``select(Model)`` is ranked on keys
and distances alone and joined to the entities once; any other select is filtered before it is
ranked, so its filters never leave the answer short.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import BindParameter, Integer, Select, bindparam, literal, select, union_all
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import ColumnElement, TableClause, column
from sqlalchemy.sql.visitors import InternalTraversal

from ..dialects import InSelected, hamming_expression
from ..store.lists import in_lists, left_behind, part_column, probed_lists, recalled_probes
from ..store.storage import Binding, binding_for
from ..text.errors import NotAttached, SchemaError
from .planner import as_select, is_plain, render_in_place, similarity_of
from .targets import fingerprint_literal, keys_equal


def list_column(binding: Binding) -> Any:
    """The bound table's list column, or :class:`NotAttached` saying how to get one."""
    if binding.mode != "columns":
        raise SchemaError(
            f"{binding.model.__name__} keeps its fingerprints in a side table; partition lists need them in the table's own columns"
        )
    part = part_column(binding)
    if part is None:
        raise NotAttached(
            f"{binding.model.__name__} has no partition lists: add simsql.lists.ListsMixin to the model "
            f"(then simsql.lists.fit_lists), or run `simsql lists fit --table {binding.names.table}`"
        )
    return part


def _candidates(
    binding: Binding, where_probed: Any, distance: ColumnElement[Any], max_distance: int | None, base: Select[Any] | None,
    limit: int, exclusion: ColumnElement[bool] | None = None, live: Sequence[int] | None = None,
    bounds: Sequence[Any] | None = None,
) -> Any:  # fmt: skip
    """``(key..., distance)`` of the ``limit`` nearest rows of the probed lists and of each
    range of rows left behind: read from the table alone (``base`` None), or from ``base``, the
    caller's select with its filters.

    Each branch is ranked and cut to ``limit`` rows on its own (the top ``limit`` of a union is
    the top ``limit`` of its branches' tops): the probed lists' rows are sorted straight off the
    list index scan, and what the union above passes on and the final sort ranks is at most
    ``limit`` rows a branch. Ranked above the union instead, every probed row went through the
    union first: PostgreSQL's ``Append``, and on MySQL and MariaDB a derived table they
    materialize, every probed row written to a temporary table (BENCHMARKS.md, issue 41,
    "Where a list row's time goes")."""
    part = list_column(binding)
    branches = []
    for where in (where_probed, *left_behind(binding, part, live, bounds)):
        if base is None:
            keys = list(binding.table_keys)
            branch = select(*keys, distance.label("distance"))
        else:
            keys = list(binding.keys)
            branch = base.with_only_columns(*keys, distance.label("distance"), maintain_column_froms=True)
        branch = branch.where(binding.fingerprint.is_not(None))
        if exclusion is not None:
            branch = branch.where(exclusion)
        branch = branch.where(where)
        if max_distance is not None:
            branch = branch.where(distance <= max_distance)
        branches.append(branch.order_by(distance, *keys).limit(limit))
    return union_all(*branches).subquery("simsql_listed")


class Chosen:
    """The lists a text query probes and the bounds of the rows left behind, chosen in Python
    when the statement is sent (:mod:`simsql.queries.plan_size`, from the live generations read
    on its connection and their cached centres), as bound parameters: the statement's compiled
    SQL is reused whatever the lists, and the server plans neither the choice nor the bounds.
    The bounds are rendered in the SQL as numbers when it is sent (they change only with the
    live generations), so the server estimates the ranges of rows left behind by their values
    whether it plans the statement afresh or reuses a plan of a prepared one."""

    def __init__(self, lists: Sequence[int], bounds: Sequence[int]) -> None:
        self.lists: BindParameter[Any] = bindparam("simsql_lists", [int(v) for v in lists], Integer(), expanding=True)
        self.bounds = tuple(bindparam(f"simsql_behind_{i}", int(b), Integer(), literal_execute=True) for i, b in enumerate(bounds))


def _text_ranking(
    binding: Binding, fingerprint: ColumnElement[Any], probes: ColumnElement[Any] | None, limit: int,
    max_distance: int | None, exclusion: ColumnElement[bool] | None, base: Select[Any] | None, chosen: Chosen | None = None,
) -> Any:  # fmt: skip
    """The top ``limit`` ``(key..., distance)`` of the probed lists and the rows left behind:
    the lists ``chosen``, or (None) the ``probes`` nearest, chosen by the statement itself."""
    part = list_column(binding)
    distance = hamming_expression(binding.fingerprint, fingerprint)
    if chosen is not None:
        listed = _candidates(binding, part.in_(chosen.lists), distance, max_distance, base, limit, exclusion, bounds=chosen.bounds)
    else:
        assert probes is not None
        probed = InSelected(part, probed_lists(binding, fingerprint, probes))
        listed = _candidates(binding, probed, distance, max_distance, base, limit, exclusion)
    keys = [listed.c[k.name] for k in binding.table_keys]
    return select(listed).order_by(listed.c.distance, *keys).limit(limit).subquery("simsql_ranked")


class _ListRanking(TableClause):
    """:func:`_text_ranking` of a plain ``select(Model)`` as a derived table built when the
    statement is compiled (as :class:`simsql.queries.planner` builds the exact ranking): its
    cache key is the model, the limit, the bound, the probes or recall asked, the shape of the
    exclusion and the bound values (the chosen lists and bounds among them), so a repeated query reuses the compiled
    SQL instead of building the expression tree of its branches (milliseconds of Python) on
    every call."""

    inherit_cache = True
    _traverse_internals = TableClause._traverse_internals + [
        ("model", InternalTraversal.dp_plain_obj),
        ("limit", InternalTraversal.dp_plain_obj),
        ("max_distance", InternalTraversal.dp_plain_obj),
        ("fingerprint", InternalTraversal.dp_clauseelement),
        ("wanted", InternalTraversal.dp_plain_obj),
        ("exclusion", InternalTraversal.dp_clauseelement),
        ("lists", InternalTraversal.dp_clauseelement),
        ("bounds", InternalTraversal.dp_clauseelement_tuple),
    ]

    def __init__(
        self, binding: Binding, fingerprint: ColumnElement[Any], wanted: tuple[int | None, int | None], limit: int,
        max_distance: int | None, exclusion: ColumnElement[bool] | None, chosen: Chosen | None,
    ) -> None:  # fmt: skip
        keys = [column(k.name, k.type) for k in binding.table_keys]
        super().__init__("simsql_ranked", *keys, column("distance", Integer()))
        self.model = binding.model
        self.limit = limit
        self.max_distance = max_distance
        self.fingerprint = fingerprint
        self.wanted = wanted
        self.exclusion = exclusion
        self.chosen = chosen
        self.lists = None if chosen is None else chosen.lists
        self.bounds = () if chosen is None else chosen.bounds

    def ranking(self) -> Any:
        binding = binding_for(self.model)
        probes = None if self.chosen is not None else _probes_of(binding, *self.wanted)
        return _text_ranking(binding, self.fingerprint, probes, self.limit, self.max_distance, self.exclusion, None, self.chosen)


def _probes_of(binding: Binding, probes: int | None, recall_percent: int | None) -> ColumnElement[Any]:
    """The probes a statement choosing its own lists reads: ``probes``, or as many as the fit
    measured ``recall_percent`` needs (:func:`simsql.store.lists.recalled_probes`)."""
    return literal(probes) if recall_percent is None else recalled_probes(binding, recall_percent)


@compiles(_ListRanking)
def _compile_list_ranking(element: _ListRanking, compiler: Any, **kw: Any) -> str:
    return render_in_place(element, element.ranking(), compiler, **kw)


def text_statement(
    stmt: Select[Any], binding: Binding, fingerprint: int, limit: int, max_distance: int | None,
    exclusion: ColumnElement[bool] | None, probes: int | None, recall_percent: int | None = None,
    chosen: Chosen | None = None,
) -> Select[Any]:  # fmt: skip
    """``stmt``'s top-``limit`` rows of the ``probes`` lists nearest ``fingerprint`` (per live
    generation) and of the rows left behind, as ``(entity, distance, similarity)``; or, with
    ``recall_percent``, of as many lists as the fit measured that recall needs
    (:func:`simsql.store.lists.recalled_probes`); or of the lists ``chosen`` already (then
    ``probes`` and ``recall_percent`` are not read). A plain ``select(Model)`` is ranked on keys
    and distances from the list index alone (:class:`_ListRanking`); any other select is
    filtered before it is ranked."""
    list_column(binding)
    target = fingerprint_literal(fingerprint)
    top: Any
    if is_plain(stmt, binding):
        top = _ListRanking(binding, target, (probes, recall_percent), limit, max_distance, exclusion, chosen)
    else:
        wanted = None if chosen is not None else _probes_of(binding, probes, recall_percent)
        top = _text_ranking(binding, target, wanted, limit, max_distance, exclusion, stmt, chosen)
    return (
        as_select(stmt)
        .add_columns(top.c.distance, similarity_of(top.c.distance))
        .join(top, keys_equal(binding.keys, [top.c[k.name] for k in binding.table_keys]))
        .order_by(top.c.distance, *binding.keys)
    )


def vector_candidates(
    stmt: Select[Any], binding: Binding, signature: Sequence[int], lists: Sequence[int], limit: int, live: Sequence[int]
) -> Select[Any]:  # fmt: skip
    """``(key..., vector, distance)`` of the ``limit`` rows of ``stmt`` nearest by signature
    among the lists ``lists`` (chosen by the caller from the vector centres) and the rows left
    behind; the distance over the four words of a wide table (256 bits), else the 64-bit
    signature. ``live``: the live generations the lists were chosen from."""
    part = list_column(binding)
    words = binding.words or (binding.fingerprint,)
    distance: Any = None
    for column, word in zip(words, signature):
        term = hamming_expression(column, fingerprint_literal(word))
        distance = term if distance is None else distance + term
    base = None if is_plain(stmt, binding) else stmt
    listed = _candidates(binding, in_lists(part, lists), distance, None, base, limit, live=live)
    keys = [listed.c[k.name] for k in binding.table_keys]
    top = select(listed).order_by(listed.c.distance, *keys).limit(limit).subquery("simsql_nearest")
    vector = binding.table.c[binding.source[0]]
    return select(*binding.table_keys, vector, top.c.distance).join(
        top, keys_equal(binding.table_keys, [top.c[k.name] for k in binding.table_keys])
    )


__all__ = ["Chosen", "list_column", "text_statement", "vector_candidates"]
