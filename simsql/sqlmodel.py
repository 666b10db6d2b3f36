"""simsql for SQLModel: the one thing a SQLModel application needs beyond the plain API.

Everything else works as it is on a ``SQLModel, table=True`` model: :class:`simsql.SimHashMixin`
(its columns are SQLAlchemy's, set through the ORM's instrumentation, never pydantic fields, so
``model_dump()`` and an API's response model leave them out), :func:`simsql.attach_model`, and
every query with a SQLModel ``Session`` (a SQLAlchemy ``Session``). docs/sqlmodel.md shows it.

What this module adds is types. ``session.exec`` reads its statement's class: a SQLModel
``select(Model)`` (``SelectOfScalar``) comes back as models alone, anything else as rows. A
:func:`simsql.most_similar` statement always comes back as ``(model, distance, similarity)``
rows; :func:`most_similar` here says so to the type checker, so that ``session.exec(...)`` is
typed ``TupleResult[tuple[Model, int, float]]`` instead of matching no overload.

Needs SQLModel (``pip install "simsql[sqlmodel]"``); importing it without raises
:class:`~simsql.errors.MissingDependency` saying so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, cast

from . import queries
from .errors import MissingDependency
from .queries.planner import DEFAULT_PROBE_RADIUS

try:
    import sqlmodel  # noqa: F401  (the dependency this module exists for)
except ModuleNotFoundError as error:
    raise MissingDependency('simsql.sqlmodel needs SQLModel: pip install "simsql[sqlmodel]"', name="sqlmodel") from error

if TYPE_CHECKING:
    from sqlmodel.sql.expression import Select, SelectOfScalar

__all__ = ["most_similar"]

Model = TypeVar("Model")


def most_similar(
    stmt: SelectOfScalar[Model],
    target: object,
    limit: int = 10,
    max_distance: int | None = None,
    exclude: object = None,
    *,
    probe_radius: int = DEFAULT_PROBE_RADIUS,
    exact: bool = True,
    scan: bool = True,
) -> Select[Model, int, float]:
    """:func:`simsql.most_similar`, typed for SQLModel's ``session.exec``::

        rows = session.exec(simsql.sqlmodel.most_similar(select(Article), "some text", limit=5))
        for article, distance, similarity in rows: ...

    The statement is :func:`simsql.most_similar`'s own, with the same arguments, plans and
    errors; only its annotation differs. (SQLModel's ``Select`` adds typing to SQLAlchemy's and
    nothing at run time: ``session.exec`` turns only a ``SelectOfScalar`` into scalars, and this
    statement never is one.)"""
    statement: Any = queries.most_similar(
        stmt, target, limit, max_distance, exclude, probe_radius=probe_radius, exact=exact, scan=scan
    )
    return cast("Select[Model, int, float]", statement)
