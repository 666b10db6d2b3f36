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
:class:`~simsql.text.errors.MissingDependency` saying so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, cast

from .queries import nearest
from .text.errors import MissingDependency

try:
    import sqlmodel  # noqa: F401  (the dependency this module exists for)
except ModuleNotFoundError as error:
    raise MissingDependency('simsql.sqlmodel needs SQLModel: pip install "simsql[sqlmodel]"', name="sqlmodel") from error

if TYPE_CHECKING:
    from sqlmodel.sql.expression import Select, SelectOfScalar

__all__ = ["most_similar"]

Model = TypeVar("Model")
Parameters = ParamSpec("Parameters")


class ExecTyped(Protocol, Generic[Parameters]):
    """A simsql statement builder as SQLModel's ``session.exec`` should see it: a SQLModel
    ``select(Model)`` in, ``(Model, distance, similarity)`` rows out; every other parameter the
    builder's own."""

    def __call__(
        self, stmt: SelectOfScalar[Model], /, *args: Parameters.args, **kwargs: Parameters.kwargs
    ) -> Select[Model, int, float]: ...


def exec_typed(builder: Callable[Concatenate[Any, Parameters], Any]) -> ExecTyped[Parameters]:
    """``builder`` itself, typed for ``session.exec``: the SQLModel face is the definition, not a
    copy of its parameters, so it cannot lose one (``probes``, say) when the definition grows.
    (SQLModel's ``Select`` adds typing to SQLAlchemy's and nothing at run time: ``session.exec``
    turns only a ``SelectOfScalar`` into scalars, and simsql's statement never is one.)"""
    return cast("ExecTyped[Parameters]", builder)


most_similar = exec_typed(nearest.most_similar)
""":func:`simsql.most_similar`, typed for SQLModel's ``session.exec``::

    rows = session.exec(simsql.sqlmodel.most_similar(select(Article), "some text", limit=5))
    for article, distance, similarity in rows: ...

The very function :func:`simsql.most_similar` (same arguments, plans and errors); only the type
checker's view of it differs."""
