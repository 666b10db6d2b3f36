"""Configuration checks carried by statements: a query or a write that simsql builds names the
table and configuration it assumes, and the check runs however the statement is executed
(a ``Session``, a ``Connection``, an async front end), from the engine events registered here.

:func:`checked` wraps an expression so that its compiled statement carries the check (cached
with the compiled form); :data:`CHECK_OPTION` carries it as an execution option. Both end in
:func:`simsql.store.registry.check`'s rule and cache (:mod:`simsql.store.registry` owns the registry's rows
and the checks' cache).
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from sqlalchemy import Engine, event
from sqlalchemy.engine import Connection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal

from ..dialects import backend
from ..schema.names import REGISTRY_TABLE
from ..text.errors import ConfigMismatch, SchemaError
from . import registry


class StatementCheck(NamedTuple):
    """What a statement simsql builds assumes of its table: the configuration its fingerprints
    are of, and (wide queries) the block layout its probes cut, as ``owner`` (a model) declares it."""

    schema: str | None
    table: str
    config_id: str
    layout: str | None = None
    owner: str = "the model"


class _Checked(ColumnElement[Any]):
    """An expression that makes the statement containing it check a configuration."""

    __visit_name__ = "simsql_checked"
    inherit_cache = True
    _traverse_internals = [
        ("element", InternalTraversal.dp_clauseelement),
        ("target", InternalTraversal.dp_plain_obj),
    ]

    def __init__(self, element: ColumnElement[Any], target: StatementCheck) -> None:
        self.element = element
        self.target = target
        self.type = element.type
        # a predicate stays a predicate: where booleans are ints (MySQL) SQLAlchemy would
        # otherwise render "<element> = 1", which hides an IN from the optimizer
        self._is_implicitly_boolean = element._is_implicitly_boolean


@compiles(_Checked)
def _compile_checked(element: _Checked, compiler: Any, **kw: Any) -> str:
    # Recorded on the compiled form, which SQLAlchemy caches with the statement: the check
    # below runs however the statement is executed (Session, Connection, any front end).
    compiler.__dict__.setdefault("_simsql_checks", set()).add(element.target)
    return str(compiler.process(element.element, **kw))


def checked(expression: ColumnElement[Any], check: StatementCheck) -> ColumnElement[Any]:
    """``expression``; a statement containing it makes ``check`` before it runs."""
    return _Checked(expression, check)


def _fresh(engine: Engine, check: StatementCheck) -> bool:
    """Both parts of ``check`` passed within ``CHECK_TTL``."""
    configuration = registry.fresh(engine, (check.schema, check.table, check.config_id))
    return configuration and (check.layout is None or registry.fresh(engine, registry.layout_target(check.schema, check.table, check.layout)))


@event.listens_for(Engine, "before_cursor_execute")
def _check_compiled(
    connection: Connection, cursor: Any, statement: Any, parameters: Any, context: Any, executemany: bool
) -> None:
    targets = getattr(getattr(context, "compiled", None), "_simsql_checks", None)
    for check in targets or ():
        if not _fresh(connection.engine, check):
            _raw_check(connection, check)


def _raw_check(connection: Connection, check: StatementCheck) -> None:
    """The registry check on the DBAPI connection itself (the statement is mid-execution)."""
    schema, table_name, config_id = check.schema, check.table, check.config_id
    # the DBAPI connection through the pool's proxy: an async driver's adapted cursor has no
    # ``cursor.connection``
    raw: Any = connection.connection.cursor()
    try:
        raw.execute(_positional(connection, backend(connection.dialect).registry_probe), (REGISTRY_TABLE, registry.VERSION_TABLE))
        has_registry, has_versions, current = raw.fetchone()
        if not has_registry:
            if has_versions:
                raw.execute(f"SELECT count(*) FROM {registry.VERSION_TABLE}")
                if raw.fetchone()[0]:
                    raise SchemaError(
                        f"{REGISTRY_TABLE} is missing although simsql's revision is applied (dropped by hand?); "
                        "run `simsql db upgrade` to recreate it"
                    )
            row = None  # no registry, nothing recorded: trusted like a passed check (CHECK_TTL)
        else:
            raw.execute(
                _positional(connection, f"SELECT config_id, settings, mode FROM {REGISTRY_TABLE} WHERE table_schema = %s AND table_name = %s"),
                (schema or current, table_name),
            )
            row = raw.fetchone()
    finally:
        raw.close()
    if row is not None and row[0] != config_id:
        registry.forget(connection.engine)
        raise ConfigMismatch(
            f"{schema or current}.{table_name} holds fingerprints of config {row[0]} "
            f"({registry.settings_difference(row[1] if isinstance(row[1], dict) else json.loads(row[1]), None)}), but this uses "
            f"{config_id}; use the same Fingerprinter settings as the data, or move the table to the new "
            "configuration with `simsql refingerprint`"
        )
    if row is not None and check.layout is not None:
        registry.refuse_layout(schema or current, table_name, row[2], check.layout, check.owner)
    registry.passed(connection.engine, (schema, table_name, config_id), None if row is None else schema or current)
    if check.layout is not None:
        registry.passed(connection.engine, registry.layout_target(schema, table_name, check.layout))


def _positional(connection: Connection, sql: str) -> str:
    """``sql``, written with ``%s`` placeholders, in the driver's own positional style: asyncpg
    takes ``$1``, ``$2`` (``numeric_dollar``); psycopg, PyMySQL and aiomysql take ``%s``."""
    style = connection.dialect.paramstyle
    markers = {"numeric_dollar": "${}", "numeric": ":{}", "qmark": "?"}.get(style)
    if markers is None:
        return sql
    head, *rest = sql.split("%s")
    return head + "".join(markers.format(number) + part for number, part in enumerate(rest, 1))


CHECK_OPTION = "simsql_config_check"
"""Execution option carrying ``(schema, table, config_id)`` on statements simsql builds."""


@event.listens_for(Engine, "before_execute")
def _check_before_execute(
    connection: Connection, statement: Any, multiparams: Any, params: Any, execution_options: Any
) -> None:
    options = getattr(statement, "_execution_options", None) or {}
    target = options.get(CHECK_OPTION) or (execution_options or {}).get(CHECK_OPTION)
    if target is not None:
        check = StatementCheck(*target)
        registry.check(connection, check.table, check.schema, check.config_id)
        registry.check_layout(connection, check.table, check.schema, check.layout, check.owner)


__all__ = ["CHECK_OPTION", "StatementCheck", "checked"]
