"""MySQL/MariaDB session state simsql sets and puts back: time bounds (``lock_wait_timeout``,
``innodb_lock_wait_timeout``, the statement-time variable) and named locks.

MySQL has no transaction-scoped settings: simsql sets session variables and puts the session's
own values back when it is done (:func:`bounded`), or, for a setting meant to last a
transaction, when the connection goes back to its pool (the ``checkin`` listener below), so no
pooled connection keeps simsql's bounds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import Connection
from sqlalchemy.pool import Pool

from .catalog import is_mariadb

TIMEOUT_CODES = {1205: "lock", 1969: "statement", 3024: "statement"}
"""``ER_LOCK_WAIT_TIMEOUT`` (metadata and row locks), MariaDB's ``ER_STATEMENT_TIMEOUT``
(``max_statement_time``), MySQL's ``ER_QUERY_TIMEOUT`` (``max_execution_time``)."""

UNBOUNDED_LOCK_WAIT = 31536000
"""The largest ``lock_wait_timeout`` (a year, in seconds): what "unbounded" sets."""
UNBOUNDED_ROW_LOCK_WAIT = 100000000
"""The largest ``innodb_lock_wait_timeout`` both MariaDB and MySQL accept."""

_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*$")
_UNIT_SECONDS = {"": 0.001, "us": 1e-6, "ms": 0.001, "s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def interval_seconds(value: str | None) -> float | None:
    """Seconds in a PostgreSQL duration (``"5s"``, ``"10min"``, ``"500ms"``; a bare number is
    milliseconds, PostgreSQL's unit for timeouts); None for None or 0 (unbounded)."""
    if value is None:
        return None
    match = _INTERVAL.match(str(value).lower())
    if match is None or match.group(2) not in _UNIT_SECONDS:
        raise ValueError(f"timeout {value!r} is not a duration such as '5s', '500ms' or '10min'")
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    return seconds or None


# Timeouts. MySQL has no transaction-scoped settings: simsql sets session variables and puts
# the session's own values back when it is done (``bounded``), or, for a setting meant to last
# a transaction, when the connection goes back to its pool (the ``checkin`` listener below), so
# no pooled connection keeps simsql's bounds.

_REMEMBERED = "simsql_session_timeouts"


def _statement_variable(connection: Connection) -> str:
    """MariaDB bounds every statement (``max_statement_time``, seconds); MySQL only SELECTs
    (``max_execution_time``, milliseconds)."""
    return "max_statement_time" if is_mariadb(connection.dialect) else "max_execution_time"


def read_timeouts(connection: Connection) -> tuple[Any, ...]:
    variable = _statement_variable(connection)
    row = connection.execute(
        text(f"SELECT @@SESSION.lock_wait_timeout, @@SESSION.innodb_lock_wait_timeout, @@SESSION.{variable}")
    ).one()
    return tuple(row)


def restore_timeouts(connection: Connection, values: Sequence[Any]) -> None:
    variable = _statement_variable(connection)
    connection.execute(
        text(f"SET SESSION lock_wait_timeout = :a, innodb_lock_wait_timeout = :b, {variable} = :c"),
        {"a": values[0], "b": values[1], "c": values[2]},
    )


def set_timeouts(connection: Connection, lock: str | None, statement: str | None, local: bool) -> None:
    """``lock``: how long to wait for a metadata or row lock (whole seconds, rounded up);
    ``statement``: how long a statement may run (MySQL: SELECTs only). The session's own
    values come back when the connection returns to its pool, ``local`` or not."""
    info = connection.connection.info
    if _REMEMBERED not in info:
        info[_REMEMBERED] = (_statement_variable(connection), read_timeouts(connection))
    lock_seconds, statement_seconds = interval_seconds(lock), interval_seconds(statement)
    lock_wait = UNBOUNDED_LOCK_WAIT if lock_seconds is None else max(1, math.ceil(lock_seconds))
    row_lock_wait = UNBOUNDED_ROW_LOCK_WAIT if lock_seconds is None else lock_wait
    if statement_seconds is None:
        statement_bound: float = 0
    elif is_mariadb(connection.dialect):
        statement_bound = statement_seconds
    else:
        statement_bound = max(1, math.ceil(statement_seconds * 1000))
    restore_timeouts(connection, (lock_wait, row_lock_wait, statement_bound))


def reset_timeouts(connection: Connection) -> None:
    """The values the session had before simsql first bounded it."""
    remembered = connection.connection.info.pop(_REMEMBERED, None)
    if remembered is not None:
        restore_timeouts(connection, remembered[1])


@event.listens_for(Pool, "checkin")
def _restore_on_checkin(dbapi_connection: Any, record: Any) -> None:
    remembered = record.info.pop(_REMEMBERED, None) if record is not None else None
    if remembered is None or dbapi_connection is None:
        return
    variable, values = remembered
    try:
        cursor = dbapi_connection.cursor()
        cursor.execute(
            f"SET SESSION lock_wait_timeout = %s, innodb_lock_wait_timeout = %s, {variable} = %s", tuple(values)
        )
        cursor.close()
    except Exception as error:  # noqa: BLE001 - a session that cannot be reset is not reused
        record.invalidate(error)


def timeout_kind(error: BaseException) -> str | None:
    """``"lock"`` or ``"statement"`` when ``error`` is a MySQL/MariaDB timeout, else None."""
    arguments = getattr(getattr(error, "orig", None), "args", None)
    if not arguments or not isinstance(arguments[0], int):
        return None
    return TIMEOUT_CODES.get(arguments[0])


ONLINE_REFUSED = (1845, 1846, 4092)
"""``ER_ALTER_OPERATION_NOT_SUPPORTED`` and ``..._REASON``: the requested ``ALGORITHM`` or
``LOCK`` cannot do this change; MySQL's ``ER_INNODB_MAX_ROW_VERSION``: the table has used up
its instant ADD/DROP COLUMNs (64, from 9.1 255) until a rebuild, which INPLACE is."""


def online_ddl_refused(error: BaseException) -> str | None:
    """The server's reason when ``error`` refuses an online ``ALGORITHM``/``LOCK``, else None."""
    arguments = getattr(getattr(error, "orig", None), "args", None)
    if not arguments or arguments[0] not in ONLINE_REFUSED:
        return None
    return str(arguments[1]).strip() if len(arguments) > 1 else "online DDL not supported"


@contextmanager
def bounded(connection: Connection, lock: str | None, statement: str | None) -> Iterator[None]:
    previous = read_timeouts(connection)
    set_timeouts(connection, lock, statement, False)
    try:
        yield
    finally:
        restore_timeouts(connection, previous)


def release_with_transaction(connection: Connection, name: str) -> None:
    dbapi_connection: Any = connection.connection.dbapi_connection
    released: list[bool] = []

    def end(finish: Any) -> None:
        if released:
            return
        released.append(True)
        finish()
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("SELECT RELEASE_LOCK(%s)", (name,))
        finally:
            cursor.close()

    event.listen(connection, "commit", lambda _connection: end(dbapi_connection.commit))
    event.listen(connection, "rollback", lambda _connection: end(dbapi_connection.rollback))


def lock_name(key: int) -> str:
    """MySQL's named locks take a string (at most 64 characters)."""
    return f"simsql_{key}"
