"""MySQL's and MariaDB's DDL of partition lists: the list column added instantly, and the
covering index (the list, then the signature words; InnoDB appends the primary key) built
online; each statement with its undo, since DDL commits at once there."""

from __future__ import annotations

from collections.abc import Sequence

from ...schema import Names
from ..plan import PartitionDDL, Plan, Present, Step
from .ddl import INSTANT, ONLINE, qualified, quote


def _alter(schema: str, table: str, change: str, algorithm: str) -> str:
    return f"ALTER TABLE {qualified(schema, table)} {change}, {algorithm}"


class MySQLPartitionDDL(PartitionDDL):
    name = "mysql"

    def add(self, schema: str, names: Names, holder_keys: Sequence[str], present: Present) -> Plan:
        holder, column, index = names.holder, quote(names.part), quote(names.part_index)
        steps = []
        if not present.has_column(names.part):
            steps.append(Step(
                _alter(schema, holder, f"ADD COLUMN {column} INT NULL", INSTANT), f"add column {names.part}",
                undo=_alter(schema, holder, f"DROP COLUMN {column}", INSTANT),
                fallback=_alter(schema, holder, f"ADD COLUMN {column} INT NULL", ONLINE),
            ))  # fmt: skip
        if not present.has_index(names.part_index):
            covered = ", ".join(quote(c) for c in (names.part, *names.part_covered))
            steps.append(Step(
                _alter(schema, holder, f"ADD INDEX {index} ({covered})", ONLINE),
                f"build index {names.part_index} on {schema}.{holder}",
                undo=_alter(schema, holder, f"DROP INDEX {index}", ONLINE), online=True,
            ))  # fmt: skip
        return self.plan(steps)

    def drop(self, schema: str, names: Names, present: Present, *, concurrently: bool = True) -> Plan:
        holder = names.holder
        steps = []
        if present.has_index(names.part_index):
            steps.append(Step(
                _alter(schema, holder, f"DROP INDEX {quote(names.part_index)}", ONLINE), f"drop index {names.part_index}",
                online=True,
            ))  # fmt: skip
        if present.has_column(names.part):
            steps.append(Step(
                _alter(schema, holder, f"DROP COLUMN {quote(names.part)}", ONLINE), f"drop column {names.part}", online=True
            ))  # fmt: skip
        return self.plan(steps)


MYSQL_PARTITION_DDL = MySQLPartitionDDL()
