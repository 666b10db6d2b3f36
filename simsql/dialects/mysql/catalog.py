"""What MySQL's and MariaDB's catalog says: tables, triggers, indexes, dependents, lock holders.

Read from information_schema (and performance_schema where the server keeps metadata locks
there) with names as bound values. information_schema compares names case-insensitively on
some servers; a name is matched exactly in Python afterwards, as ``lower_case_table_names=0``
(Linux) keeps ``Articles`` and ``articles`` apart.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection, Dialect

from ...schema.names import Names
from ..ddl_plan import Column, TableFacts
from .ddl import quote

TEXT_TYPES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})


def is_mariadb(dialect: Dialect) -> bool:
    return bool(getattr(dialect, "is_mariadb", False))


def _stores_no_checks(connection: Connection) -> bool:
    """MySQL 8.0.0-8.0.15: CHECK constraints were accepted and ignored, and
    information_schema.CHECK_CONSTRAINTS did not exist yet."""
    version = tuple(getattr(connection.dialect, "server_version_info", None) or ())
    return not is_mariadb(connection.dialect) and bool(version) and version[:3] < (8, 0, 16)


def table_facts(connection: Connection, schema: str, table: str) -> TableFacts | None:
    """(kind ``r`` or ``p`` for partitioned, [(column, type, is_text)], primary key, the
    table's triggers) of a base table, or None. A string column's type carries its character
    set and collation, so a side table's key built from it can reference it."""
    where = {"schema": schema, "table": table}
    found = [
        row for row in connection.execute(
            text("SELECT TABLE_NAME, TABLE_TYPE, CREATE_OPTIONS FROM information_schema.TABLES "
                 "WHERE TABLE_SCHEMA = :schema AND TABLE_NAME = :table"), where
        )
        if row[0] == table
    ]
    if not found or found[0][1] != "BASE TABLE":
        return None
    kind = "p" if "partitioned" in str(found[0][2] or "").lower() else "r"
    columns = []
    for name, column_type, data_type, charset, collation, owner in connection.execute(
        text(
            "SELECT COLUMN_NAME, COLUMN_TYPE, DATA_TYPE, CHARACTER_SET_NAME, COLLATION_NAME, TABLE_NAME "
            "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = :schema AND TABLE_NAME = :table ORDER BY ORDINAL_POSITION"
        ),
        where,
    ):
        if owner != table:
            continue
        spelled = str(column_type)
        if charset:
            spelled += f" CHARACTER SET {charset} COLLATE {collation}"
        columns.append(Column(str(name), spelled, str(data_type).lower() in TEXT_TYPES))
    keys = tuple(
        str(row[0]) for row in connection.execute(
            text("SELECT COLUMN_NAME, TABLE_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = :schema "
                 "AND TABLE_NAME = :table AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX"), where
        )
        if row[1] == table
    )
    return TableFacts(schema, table, kind, {c.name: c for c in columns}, keys, triggers_on(connection, schema, table))


def triggers_on(connection: Connection, schema: str, table: str) -> tuple[str, ...]:
    return tuple(
        str(row[0]) for row in connection.execute(
            text("SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS "
                 "WHERE EVENT_OBJECT_SCHEMA = :schema AND EVENT_OBJECT_TABLE = :table ORDER BY TRIGGER_NAME"),
            {"schema": schema, "table": table},
        )
        if row[1] == table
    )


_TRIGGER_EVENT = re.compile(r" (BEFORE|AFTER) (INSERT|UPDATE|DELETE) ON ")


def triggers_as_written(
    connection: Connection, schema: str, table: str, trigger_names: Sequence[str], statements: Sequence[str]
) -> bool:
    """Whether the triggers named ``trigger_names`` are on ``table`` with the timing, event and
    body of ``statements`` (simsql's ``CREATE TRIGGER``, one per name), and no others hold them."""
    expected = set()
    for name, statement in zip(trigger_names, statements, strict=True):
        head, body = statement.split("\n", 1)
        event = _TRIGGER_EVENT.search(head)
        if event is None:
            return False
        expected.add((name, table, event[1], event[2], body))
    rows = connection.execute(
        text("SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE, ACTION_TIMING, EVENT_MANIPULATION, ACTION_STATEMENT "
             "FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = :schema AND TRIGGER_NAME IN :names")
        .bindparams(bindparam("names", expanding=True)),
        {"schema": schema, "names": list(trigger_names)},
    )  # fmt: skip
    return {tuple(str(value) for value in row) for row in rows} == expected


def schema_triggers(connection: Connection, schema: str) -> dict[str, str]:
    """Every trigger of ``schema`` and its table: MySQL trigger names are unique per schema,
    not per table, so a name simsql would use is taken whichever table holds it."""
    return {
        str(row[0]): str(row[1])
        for row in connection.execute(
            text("SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = :schema"),
            {"schema": schema},
        )
    }


def index_names(connection: Connection, schema: str, table: str) -> tuple[str, ...]:
    return tuple(sorted({
        str(row[0]) for row in connection.execute(
            text("SELECT INDEX_NAME, TABLE_NAME FROM information_schema.STATISTICS "
                 "WHERE TABLE_SCHEMA = :schema AND TABLE_NAME = :table"), {"schema": schema, "table": table}
        )
        if row[1] == table
    }))


def dependents(connection: Connection, schema: str, table: str, columns: Sequence[str], own: Sequence[str]) -> list[str]:
    """Objects simsql did not create that use ``columns`` of ``schema.table`` (or the whole
    table when ``columns`` is empty), other than the indexes ``own``: indexes, generated
    columns, CHECK constraints, foreign keys, triggers (on the whole table) and views."""
    where = {"schema": schema, "table": table}
    wanted = set(columns)
    found: set[str] = set()

    def uses(name: Any) -> bool:
        return not wanted or str(name) in wanted

    for index, column, owner in connection.execute(
        text("SELECT INDEX_NAME, COLUMN_NAME, TABLE_NAME FROM information_schema.STATISTICS "
             "WHERE TABLE_SCHEMA = :schema AND TABLE_NAME = :table"), where
    ):
        if owner == table and index != "PRIMARY" and index not in own and uses(column):
            found.add(f"index {index} on table {table}")
    if wanted:
        for name, expression, owner in connection.execute(
            text("SELECT COLUMN_NAME, GENERATION_EXPRESSION, TABLE_NAME FROM information_schema.COLUMNS "
                 "WHERE TABLE_SCHEMA = :schema AND TABLE_NAME = :table AND GENERATION_EXPRESSION <> ''"), where
        ):
            if owner == table and name not in wanted and any(quote(c) in str(expression) for c in wanted):
                found.add(f"generated column {table}.{name}")
        # MySQL's CHECK_CONSTRAINTS has no TABLE_NAME, but its CHECK names are unique per schema,
        # so TABLE_CONSTRAINTS names the table; MariaDB's names are per table, and it has one.
        # MySQL before 8.0.16 parsed CHECK clauses and kept none (nor that table): nothing to find.
        checks = None if _stores_no_checks(connection) else (
            "SELECT CONSTRAINT_NAME, CHECK_CLAUSE, TABLE_NAME FROM information_schema.CHECK_CONSTRAINTS "
            "WHERE CONSTRAINT_SCHEMA = :schema AND TABLE_NAME = :table"
        ) if is_mariadb(connection.dialect) else (
            "SELECT c.CONSTRAINT_NAME, c.CHECK_CLAUSE, t.TABLE_NAME FROM information_schema.CHECK_CONSTRAINTS c "
            "JOIN information_schema.TABLE_CONSTRAINTS t ON t.CONSTRAINT_SCHEMA = c.CONSTRAINT_SCHEMA "
            "AND t.CONSTRAINT_NAME = c.CONSTRAINT_NAME AND t.CONSTRAINT_TYPE = 'CHECK' "
            "WHERE c.CONSTRAINT_SCHEMA = :schema AND t.TABLE_NAME = :table"
        )
        for name, clause, owner in connection.execute(text(checks), where) if checks else ():
            if owner == table and any(quote(c) in str(clause) for c in wanted):
                found.add(f"check constraint {name} on table {table}")
    else:
        for trigger in triggers_on(connection, schema, table):
            found.add(f"trigger {trigger} on table {table}")
    for name, owner, column, referenced, referenced_column in connection.execute(
        text("SELECT CONSTRAINT_NAME, TABLE_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME "
             "FROM information_schema.KEY_COLUMN_USAGE WHERE REFERENCED_TABLE_SCHEMA IS NOT NULL AND "
             "((TABLE_SCHEMA = :schema AND TABLE_NAME = :table) OR (REFERENCED_TABLE_SCHEMA = :schema "
             "AND REFERENCED_TABLE_NAME = :table))"), where
    ):
        # another table's foreign key to these columns, or one of these columns' own
        theirs = referenced == table and owner != table and uses(referenced_column)
        if theirs or (owner == table and wanted and str(column) in wanted):
            found.add(f"constraint {name} on table {owner}")
    qualified_table = f"{quote(schema)}.{quote(table)}"
    needles = [f"{qualified_table}.{quote(c)}" for c in wanted] or [qualified_table]
    for view_schema, view, definition in connection.execute(
        text("SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS")
    ):
        if any(needle in str(definition) for needle in needles):
            found.add(f"view {view_schema}.{view}")
    return sorted(found)


_NAME = re.compile(r'`((?:[^`]|``)*)`|"((?:[^"]|"")*)"|([^.`"]+)')


def split_qualified(relation: str) -> tuple[str, ...]:
    """``schema.table`` text quoted either way (backquotes, double quotes) or not, as names."""
    return tuple(
        m.group(1).replace("``", "`") if m.group(1) is not None
        else m.group(2).replace('""', '"') if m.group(2) is not None else m.group(3).strip()
        for m in _NAME.finditer(relation)
    )


def _lock_holders(connection: Connection, relations: Sequence[tuple[str, ...]]) -> set[int] | None:
    """Sessions holding a metadata lock on one of ``relations``, where the server says
    (MySQL's ``performance_schema.metadata_locks``, MariaDB's ``METADATA_LOCK_INFO`` plugin);
    None where it does not."""
    pairs = [r for r in relations if len(r) == 2]
    if not pairs:
        return None
    if not is_mariadb(connection.dialect) and connection.execute(text("SELECT @@performance_schema")).scalar():
        sql = ("SELECT t.PROCESSLIST_ID, m.OBJECT_SCHEMA, m.OBJECT_NAME FROM performance_schema.metadata_locks m "
               "JOIN performance_schema.threads t ON t.THREAD_ID = m.OWNER_THREAD_ID "
               "WHERE m.LOCK_STATUS = 'GRANTED' AND m.OBJECT_TYPE = 'TABLE'")
    elif connection.execute(
        text("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'information_schema' "
             "AND TABLE_NAME = 'METADATA_LOCK_INFO'")
    ).scalar():
        sql = "SELECT THREAD_ID, TABLE_SCHEMA, TABLE_NAME FROM information_schema.METADATA_LOCK_INFO"
    else:
        return None
    return {int(row[0]) for row in connection.execute(text(sql)) if (row[1], row[2]) in pairs and row[0] is not None}


def blockers(connection: Connection, relations: Sequence[str]) -> str:
    """Sessions holding a metadata lock on ``relations`` (where the server can say), and
    sessions of this database with an open transaction or a running statement: who a DDL
    waits on."""
    holders = _lock_holders(connection, [split_qualified(r) for r in relations]) or set()
    rows = connection.execute(
        text(
            "SELECT p.ID, p.COMMAND, COALESCE(p.STATE, ''), LEFT(COALESCE(p.INFO, t.trx_query, ''), 80), "
            "TIMESTAMPDIFF(SECOND, t.trx_started, NOW()), p.ID IN :holders "
            "FROM information_schema.PROCESSLIST p LEFT JOIN information_schema.INNODB_TRX t "
            "ON t.trx_mysql_thread_id = p.ID WHERE p.ID <> CONNECTION_ID() AND (p.ID IN :holders OR "
            "(p.DB = DATABASE() AND (t.trx_id IS NOT NULL OR (p.COMMAND = 'Query' AND COALESCE(p.STATE, '') "
            "NOT LIKE 'Waiting for%')))) ORDER BY p.ID"
        ).bindparams(bindparam("holders", expanding=True)),
        {"holders": sorted(holders) or [-1]},
    ).all()
    if not rows:
        return "no session holds it any more"

    def describe(row: Any) -> str:
        state = "idle in transaction" if row[1] == "Sleep" else f"{row[1]}{': ' + row[2] if row[2] else ''}"
        age = f", transaction open {row[4]} s" if row[4] is not None else ""
        return f"session {row[0]} ({state}{age}: {row[3]!r})"

    return "; ".join(describe(row) for row in rows)


def attach_conflicts(connection: Connection, facts: TableFacts, names: Names) -> list[str]:
    """Objects simsql did not create that hold one of ``names``, by MySQL's rules: column and
    index names compare case-insensitively, and a trigger name is taken in the whole schema,
    whichever table holds it."""
    found = []
    if names.side is None:
        columns = {c.lower() for c in facts.columns}
        found += [f"column {facts.name}.{c}" for c in names.added_columns if c.lower() in columns]
        indexes = {i.lower() for i in index_names(connection, facts.schema, facts.name)}
        found += [f"index {i} on {facts.name}" for i in names.indexes if i.lower() in indexes]
    elif table_facts(connection, facts.schema, names.side) is not None:
        found.append(f"table {facts.schema}.{names.side}")
    taken = {t.lower(): table for t, table in schema_triggers(connection, facts.schema).items()}
    found += [f"trigger {t} on {taken[t.lower()]}" for t in (*names.row_triggers, names.stale_function) if t.lower() in taken]
    return found
