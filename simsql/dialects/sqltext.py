"""SQL text as simsql writes it for a driver: identifiers quoted by the dialect's own rule,
statements handed over without the driver reading ``%`` or ``:name`` in them, and whether a
connection commits each statement on its own. Shared by every family and by the lifecycle."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection


def sql_identifier(preparer: Any, name: str) -> str:
    """``name`` quoted by ``preparer``'s rule, as the server reads it. The preparer's own
    ``quote_identifier`` also doubles ``%`` where the driver formats parameters with ``%``,
    which only a compiled statement wants: simsql's SQL text is escaped once, where it runs
    (``text()``, or :func:`execute_sql`), so a ``%`` in a name reaches the server as it is."""
    return f"{preparer.initial_quote}{name.replace(preparer.escape_quote, preparer.escape_to_quote)}{preparer.final_quote}"


def execute_sql(connection: Connection, sql: str, params: dict[str, Any] | None = None) -> Any:
    """Run SQL text written by simsql. With ``params``: bound through ``text()``, which escapes
    ``%`` for the driver. Without: handed to the driver as it is (``no_parameters``), so
    neither a ``%`` nor a ``:name`` in a quoted identifier or a trigger body is read as a
    parameter. The one place simsql's raw SQL meets the driver's parameter syntax."""
    if params:
        return connection.execute(text(sql), params)
    return connection.exec_driver_sql(sql, execution_options={"no_parameters": True})


def is_autocommit(connection: Connection) -> bool:
    """Whether each statement commits on its own (needed by ``CONCURRENTLY``). PyMySQL and
    mysqlclient name a *method* ``autocommit`` (always true as a value): their state is
    ``get_autocommit()``."""
    if connection.get_execution_options().get("isolation_level") == "AUTOCOMMIT":
        return True
    dbapi_connection = connection.connection.dbapi_connection
    getter = getattr(dbapi_connection, "get_autocommit", None)
    if callable(getter):
        return bool(getter())
    return bool(getattr(dbapi_connection, "autocommit", False))
