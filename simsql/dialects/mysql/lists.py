"""MySQL's and MariaDB's DDL of partition lists: the list column added instantly, and the
covering index (the list, then the signature words; InnoDB appends the primary key) built
online; each statement with its undo, since DDL commits at once there."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import BigInteger, Integer, bindparam, column, select, table, union_all, update
from sqlalchemy.ext.compiler import compiles

from ...schema.names import CENTRES_TABLE, Names
from ..constructs import InSelected
from ..ddl_plan import DDLPlan, ListsDDL, Present, Step
from .compile import MYSQL_DIALECTS
from .ddl import INSTANT, ONLINE, qualified, quote


def _in_selected(element: InSelected, compiler: Any, **kw: Any) -> str:
    return f"{compiler.process(element.column, **kw)} IN ({compiler.process(element.selected, asfrom=False, **kw)})"


for _name in MYSQL_DIALECTS:
    compiles(InSelected, _name)(_in_selected)


def _alter(schema: str, table: str, change: str, algorithm: str) -> str:
    return f"ALTER TABLE {qualified(schema, table)} {change}, {algorithm}"


class MySQLListsDDL(ListsDDL):
    name = "mysql"

    def add(
        self, schema: str, names: Names, holder_keys: Sequence[str], present: Present, *, concurrently: bool = True,
        empty: bool = False,
    ) -> DDLPlan:  # fmt: skip
        """MariaDB adds no column online to a table with indexed generated columns (simsql's
        blocks): on an empty table it may copy (nothing to copy), on one with rows it is refused."""
        holder, column, index = names.holder, quote(names.part), quote(names.part_index)
        steps = []
        if not present.has_column(names.part):
            steps.append(Step(
                _alter(schema, holder, f"ADD COLUMN {column} INT NULL", INSTANT), f"add column {names.part}",
                undo=_alter(schema, holder, f"DROP COLUMN {column}", INSTANT),
                fallback=_alter(schema, holder, f"ADD COLUMN {column} INT NULL", "ALGORITHM=COPY" if empty else ONLINE),
            ))  # fmt: skip
        if not present.has_index(names.part_index):
            covered = ", ".join(quote(c) for c in (names.part, *names.part_covered))
            steps.append(Step(
                _alter(schema, holder, f"ADD INDEX {index} ({covered})", ONLINE),
                f"build index {names.part_index} on {schema}.{holder}",
                undo=_alter(schema, holder, f"DROP INDEX {index}", ONLINE), online=True,
            ))  # fmt: skip
        return self.plan(steps)

    def write_lists(self, connection: Any, relation: Any, keys: Sequence[str], fingerprint: str, part: str, rows: Sequence[Sequence[Any]]) -> int:
        """One multi-table ``UPDATE`` joined to the rows as a derived ``UNION ALL`` of bound
        values (the statement of a full batch is built and compiled once)."""
        statement = _write_statement(relation.schema, relation.name, tuple(keys), fingerprint, part, len(rows))
        params = {f"c{j}_{i}": value for i, row in enumerate(rows) for j, value in enumerate(row)}
        return int(connection.execute(statement, params).rowcount or 0)

    def rebuild(self, schema: str, names: Names, indexes: Sequence[str]) -> DDLPlan:
        """Nothing: InnoDB updates no other index when a row's list changes, and the list index a
        fit leaves is the size of a fresh online build of it once purge (a background job, seconds
        after the fit) has removed the entries the fit's updates delete-marked (BENCHMARKS.md,
        "Lists without collateral"; ``tests/test_lists_collateral.py``); :meth:`index_sizes` is
        empty, so a fit never asks."""
        return self.plan([])

    def refresh(self, schema: str, table: str) -> DDLPlan:
        tables = f"{qualified(schema, table)}, {quote(CENTRES_TABLE)}"
        return self.plan([Step(f"ANALYZE TABLE {tables}", f"analyze {schema}.{table} and {CENTRES_TABLE}", online=True)])

    def drop(self, schema: str, names: Names, present: Present, *, concurrently: bool = True, column: bool = True) -> DDLPlan:
        holder = names.holder
        steps = []
        if present.has_index(names.part_index):
            steps.append(Step(
                _alter(schema, holder, f"DROP INDEX {quote(names.part_index)}", ONLINE), f"drop index {names.part_index}",
                online=True,
            ))  # fmt: skip
        if column and present.has_column(names.part):
            steps.append(Step(
                _alter(schema, holder, f"DROP COLUMN {quote(names.part)}", ONLINE), f"drop column {names.part}", online=True
            ))  # fmt: skip
        return self.plan(steps)


@lru_cache(maxsize=32)
def _write_statement(schema: str, holder: str, keys: tuple[str, ...], fingerprint: str, part: str, count: int) -> Any:
    names = (*keys, fingerprint, part)
    relation = table(holder, *(column(name) for name in names), schema=schema)
    types = [None] * len(keys) + [BigInteger(), Integer()]
    rows = [
        select(*(bindparam(f"c{j}_{i}", type_=types[j]).label(name) for j, name in enumerate(names))) for i in range(count)
    ]
    values = union_all(*rows).subquery("simsql_placed") if count > 1 else rows[0].subquery("simsql_placed")
    match = [relation.c[name] == values.c[name] for name in (*keys, fingerprint)]
    return update(relation).where(*match).values({part: values.c[part]})


MYSQL_PARTITION_DDL = MySQLListsDDL()
