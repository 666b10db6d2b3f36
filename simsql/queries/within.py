"""``similar_to``'s bounded search as one SQL element: every row within ``max_distance`` bits,
through the block indexes (pigeonhole: a row within ``4r + 3`` bits has a block within ``r``).
Built when the statement is compiled, so a repeated query reuses the compiled SQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Boolean, and_, or_, select, tuple_, union_all
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal

from .. import dialects
from ..dialects import equals_any, hamming_expression, probe_parameter, probe_values, radius_for
from ..store.storage import Binding, binding_for
from ..text.bits import blocks
from .targets import fingerprint_literal


class Within(ColumnElement[bool]):
    """What :func:`simsql.queries.similar_to` returns: ``key IN (<rows within max_distance bits>)``, built
    when the statement is compiled rather than when it is called.

    Its cache key is the model, the bound and the bound values (the fingerprint and each
    block's probe values) and nothing else, so a repeated query only computes that short key
    and finds its compiled SQL in SQLAlchemy's cache: the expression tree of the per-block
    union is built once per model and bound (per dialect), not once per call.
    """

    inherit_cache = True
    _is_implicitly_boolean = True
    _traverse_internals = [
        ("model", InternalTraversal.dp_plain_obj),
        ("max_distance", InternalTraversal.dp_plain_obj),
        ("fingerprint", InternalTraversal.dp_clauseelement),
        ("probes", InternalTraversal.dp_clauseelement_list),
    ]

    def __init__(self, binding: Binding, fingerprint: int, max_distance: int) -> None:
        radius = radius_for(max_distance)
        self.type = Boolean()
        self.model = binding.model
        self.max_distance = max_distance
        self.fingerprint = fingerprint_literal(fingerprint)
        self.probes = [probe_parameter(probe_values(value, radius)) for value in blocks(fingerprint)]

    @property
    def _from_objects(self) -> list[Any]:
        return list(binding_for(self.model).keys[0]._from_objects)

    def rows_within(self) -> ColumnElement[bool]:
        """The statement's SQL form, from this element's own bound values (so a cached
        compilation maps every later call's values onto it)."""
        binding = binding_for(self.model)
        distance = hamming_expression(binding.fingerprint, self.fingerprint)
        per_block = [
            select(*binding.table_keys).where(equals_any(column, probes), distance <= self.max_distance)
            for column, probes in zip(binding.blocks, self.probes)
        ]
        # Selected from a derived table rather than IN (<union>) directly: MariaDB rewrites an
        # IN over a UNION into a subquery correlated per row of the outer table (a scan in
        # disguise), while PostgreSQL plans both spellings the same.
        union_rows = union_all(*per_block).subquery("simsql_matches")
        matches = select(*union_rows.c)
        if len(binding.keys) == 1:
            return binding.keys[0].in_(matches)  # type: ignore[no-any-return]
        return tuple_(*binding.keys).in_(matches)


    def probes_or(self) -> ColumnElement[bool]:
        """Where the fingerprint is on the model's own table: an ``OR`` of the block probes and
        the distance, for a backend whose ``or_probes`` says so (Citus: one shard task plans a
        bitmap ``OR`` faster than a semi-join over a union, and planning is most of its cost)."""
        binding = binding_for(self.model)
        distance = hamming_expression(binding.fingerprint, self.fingerprint)
        probes = [equals_any(column, probes) for column, probes in zip(binding.blocks, self.probes)]
        return and_(or_(*probes), distance <= self.max_distance)


@compiles(Within)
def _compile_within(element: Within, compiler: Any, **kw: Any) -> str:
    if binding_for(element.model).mode == "columns" and dialects.backend(compiler.dialect).or_probes:
        return str(compiler.process(element.probes_or(), **kw))
    return str(compiler.process(element.rows_within(), **kw))


__all__ = ["Within"]
