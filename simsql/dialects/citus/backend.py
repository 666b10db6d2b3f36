"""Citus (distributed PostgreSQL): :class:`CitusBackend`, the PostgreSQL family's variant.

Chosen from the server (:meth:`CitusBackend.detect`: the ``citus`` extension is installed in the
connected database), it is PostgreSQL with what Citus refuses taken another way:

* **DDL on distributed tables** (attach, detach, indexes, refingerprint) runs with
  ``citus.enable_unsafe_triggers = on`` (simsql's row trigger reads and writes only its own row,
  or the co-located side row of the same key, so it is safe on shards) and
  ``citus.multi_shard_modify_mode = 'sequential'`` (a function or trigger created after a
  multi-shard statement in one transaction is refused in parallel mode). Both are set with the
  time bounds of simsql's own transactions, ``SET LOCAL`` inside them, so nothing outlives them.
* **A side table** created for a distributed table is distributed co-located with it (on the
  same column; a reference table's side table is a reference table), so its foreign key, the
  stale-row trigger and the joins of every query stay on one shard.
* **Plans**: ``most_similar`` takes the eager plan (:attr:`CitusBackend.lazy_branches`: band 0,
  then a scan guarded by band 0's count; Citus runs every ``UNION ALL`` branch first, each as a
  round trip to the workers); the table's row estimate (the band budget's, and
  what chooses a plan by size) is its shards' summed (:meth:`CitusBackend.row_estimate_sql`); ``most_similar_many`` takes the
  window-function plan (Citus refuses the LATERAL one); ``near_duplicates`` reads keys and fingerprints once
  from the shards (a ``MATERIALIZED`` CTE) and joins them on the coordinator (Citus cannot run
  a self-join on anything but the distribution column in place); a backfill stores a side
  table's batch shard by shard, in statements naming their keys, which Citus routes to one
  shard each (and which may then lock the base rows ``FOR SHARE``).
* :func:`distribute_sql`: what :func:`simsql.lifecycle.distribute.distribute` runs for the user's own tables.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import Connection, Engine

from ...schema.names import Names
from ..base import backend
from ..batch import Job
from ..ddl_plan import DDLPlan, Step, TableShape
from ..postgresql.backend import PostgresBackend
from ..postgresql.backfill import PostgresBatchSQL
from ..postgresql.ddl import PostgresDDL, qualified, quote
from ..sqltext import execute_sql

CITUS_TRUNCATE_TRIGGER = re.compile(r"trigger truncate_trigger_[0-9]+ on table ")
"""How ``pg_describe_object`` names the trigger Citus adds to each distributed table."""

SETTINGS = {"citus.enable_unsafe_triggers": "on", "citus.multi_shard_modify_mode": "sequential"}
"""What simsql's own DDL transactions set (``SET LOCAL``) on a Citus server."""


SHARD_ROWS_SQL = (
    "SELECT COALESCE(sum(CAST(result AS float8)), 0) FROM ("
    "WITH placed AS (SELECT DISTINCT ON (s.shardid) n.nodename, n.nodeport, shard_name(s.logicalrelid, s.shardid) AS shard "
    "FROM pg_dist_shard s JOIN pg_dist_placement p ON p.shardid = s.shardid JOIN pg_dist_node n ON n.groupid = p.groupid "
    "WHERE s.logicalrelid = to_regclass({name}) ORDER BY s.shardid, p.placementid), "
    "asked AS (SELECT nodename, nodeport, 'SELECT COALESCE(sum(greatest(reltuples, 0)), 0) FROM pg_class WHERE oid IN "
    "(SELECT to_regclass(n) FROM unnest(CAST(ARRAY[' || string_agg(quote_literal(shard), ',') || '] AS text[])) AS n)' AS command "
    "FROM placed GROUP BY nodename, nodeport) "
    "SELECT * FROM master_run_on_worker("
    "ARRAY(SELECT nodename FROM asked ORDER BY nodename, nodeport), ARRAY(SELECT nodeport FROM asked ORDER BY nodename, nodeport), "
    "ARRAY(SELECT command FROM asked ORDER BY nodename, nodeport), true)"
    ") AS read WHERE success"
)
"""The rows of a distributed, reference or Citus-local table ``{name}`` (a string literal): the
sum of its shards' own estimates (``pg_class.reltuples`` on the node holding each, one placement
a shard), each node asked once, all at once (``master_run_on_worker``: a new connection per node,
so the cost is about one connection's, whatever the number of nodes). What Citus's own
``citus_stats`` sums, without its connection per shard (``run_command_on_shards``). Exact where
the shards were analysed, unlike a page sample, which reads 0 for a small table; a few times the
sample's cost, read at most once a minute (BENCHMARKS.md, "The row estimate of a table in
Citus"). A node that cannot answer adds nothing."""


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def colocate_sql(schema: str, base: str, side: str) -> str:
    """A statement distributing ``side`` like ``base``: co-located on the same column when
    ``base`` is hash-distributed, a reference table when ``base`` is one, else nothing (a
    local table stays local). Decided by the server when it runs, from ``pg_dist_partition``."""
    base_name, side_name = _literal(qualified(schema, base)), _literal(qualified(schema, side))
    return (
        "DO $simsql$ DECLARE k text; m text; r text; BEGIN "
        "SELECT column_to_column_name(logicalrelid, partkey), CAST(partmethod AS text), CAST(repmodel AS text) "
        f"INTO k, m, r FROM pg_dist_partition WHERE logicalrelid = CAST({base_name} AS regclass); "
        f"IF m = 'h' THEN PERFORM create_distributed_table({side_name}, k, colocate_with => {base_name}); "
        f"ELSIF m = 'n' AND r = 't' THEN PERFORM create_reference_table({side_name}); "
        "END IF; END $simsql$"
    )


def distribute_sql(schema: str, table: str, column: str | None, side: str | None) -> list[tuple[str, dict[str, Any]]]:
    """The statements distributing the user's ``schema.table`` by ``column`` (None: a reference
    table), then simsql's side table ``side`` co-located with it; run after
    :data:`SETTINGS` in one transaction."""
    name = qualified(schema, table)
    if column is None:
        statements = [("SELECT create_reference_table(:t)", {"t": name})]
    else:
        statements = [("SELECT create_distributed_table(:t, :c)", {"t": name, "c": column})]
    if side is not None:
        statements.append((colocate_sql(schema, table, side), {}))
    return statements


class CitusDDL(PostgresDDL):
    """PostgreSQL's DDL, with a side table distributed like its base table."""

    def create_side_table(self, target: TableShape, names: Names) -> DDLPlan:
        plan = super().create_side_table(target, names)
        assert names.side is not None
        step = Step(colocate_sql(target.schema, target.table, names.side), f"distribute {names.side} like {target.table}")
        return DDLPlan((plan.steps[0], step, *plan.steps[1:]), plan.dialect)

    def _rename_shadow(
        self, target: TableShape, names: Names, shadow: Names, after: Names, side_keys: tuple[str, str] | None,
        partitions: Sequence[str],
    ) -> list[Step]:  # fmt: skip
        """PostgreSQL's, with the shadow side table's primary key renamed through its index
        (``ALTER INDEX ... RENAME`` renames the constraint too): Citus refuses ``RENAME
        CONSTRAINT`` on a distributed table."""
        steps = super()._rename_shadow(target, names, shadow, after, side_keys, partitions)
        if side_keys is None or side_keys[0] == side_keys[1]:
            return steps
        rename = f"ALTER INDEX {qualified(target.schema, side_keys[0])} RENAME TO {quote(side_keys[1])}"
        return [replace(step, sql=rename) if " RENAME CONSTRAINT " in step.sql else step for step in steps]


CITUS_DDL = CitusDDL()


class CitusBatchSQL(PostgresBatchSQL):
    """A side table's batch of a hash-distributed table is stored shard by shard: its rows
    grouped by the shard of their distribution column (asked of the coordinator, which holds the
    shard map), then one statement per shard that names those keys (``b.<column> = ANY(...)``),
    which Citus routes to that shard alone and runs there as a whole (the ``INSERT ... SELECT``
    of the whole batch was pulled to the coordinator). It keeps PostgreSQL's ``FOR SHARE OF b``
    (a writer changing one of the rows waits, and its trigger then drops the new side row):
    Citus refuses row locks only in a statement over several shards. Shards go in shard order,
    keys in key order, so two backfills lock in the same order.

    Fingerprint columns keep PostgreSQL's one ``UPDATE`` per batch (a task per shard, each
    joining the whole batch's arrays on the key): stored shard by shard it was no faster at 32
    shards and slower at 4 (BENCHMARKS.md, ``benchmarks/citus_throughput.py``). A reference
    or local table takes PostgreSQL's statement too."""

    distribution: tuple[str, str | None] | None = None
    """(``pg_dist_partition.partmethod`` or ``""`` for a local table, distribution column)."""

    columns_by_shard = False
    """Whether fingerprint columns are stored shard by shard too (``benchmarks/citus_throughput.py``
    times both stores)."""

    routed: Any = None
    """The statement storing one shard's rows (built at the first batch of a distributed table)."""

    def routed_key(self, connection: Connection) -> int | None:
        """The index of the distribution column among the key columns, for a hash-distributed
        table (None otherwise)."""
        if self.distribution is None:
            found = connection.execute(
                text(
                    "SELECT CAST(partmethod AS text), column_to_column_name(logicalrelid, partkey) "
                    "FROM pg_dist_partition WHERE logicalrelid = CAST(:t AS regclass)"
                ),
                {"t": self.base},
            ).first()
            self.distribution = ("", None) if found is None else (str(found[0]), found[1])
        method, column = self.distribution
        return self.job.keys.index(column) if method == "h" and column in self.job.keys else None

    def store(self, connection: Connection, rows: Sequence[Any]) -> int:
        by_shard = self.job.names.side is not None or self.columns_by_shard
        pinned = self.routed_key(connection) if rows and by_shard else None
        if pinned is None:
            return super().store(connection, rows)
        if self.routed is None:
            self.routed = self.write_statement(self.quoted_keys, pinned)
        statement = self.routed
        shards = connection.execute(
            text(
                f"SELECT get_shard_id_for_distribution_column(CAST(:t AS regclass), v) "
                f"FROM unnest(CAST(:v AS {self.job.key_types[pinned]}[])) WITH ORDINALITY AS u(v, n) ORDER BY n"
            ),
            {"t": self.base, "v": [r.key[pinned] for r in rows]},
        ).scalars()
        groups: dict[int, list[Any]] = {}
        for shard, row in zip(shards, rows):
            groups.setdefault(int(shard), []).append(row)
        return sum(self.store_with(connection, statement, groups[shard]) for shard in sorted(groups))


_SETTLING: set[int] = set()
"""Dialects (by id) whose variant is being detected: the detection's own statement passes."""


@event.listens_for(Engine, "before_execute")
def _settle_variant(connection: Connection, *_: Any) -> None:
    """Detect the variant of a PostgreSQL server (Citus or not) before the first statement an
    engine runs, on its own connection: statements compiled afterwards (the plan of
    ``most_similar``, the row estimate) take the variant's form even when nothing asked for the
    backend before (a compiler sees only the dialect). One query per engine, then a lookup."""
    dialect = connection.dialect
    if dialect.name != "postgresql" or id(dialect) in _SETTLING:
        return
    _SETTLING.add(id(dialect))
    try:
        backend(connection)
    finally:
        _SETTLING.discard(id(dialect))


class CitusBackend(PostgresBackend):
    """PostgreSQL with the ``citus`` extension: distributed and reference tables."""

    ddl = CITUS_DDL
    many_targets_plan = "window"
    lazy_branches = False
    """Citus plans every ``UNION ALL`` branch of a top-k (each band, each check, each block probe
    of a ``LIMIT``-ed branch) as a distributed subplan of its own and runs them all before the
    final query: 25 round trips to the workers for a top-10 in PostgreSQL's lazy plan. The eager
    plan (band 0, then a scan guarded by band 0's count, as on MySQL) takes a few."""

    or_probes = True
    """``similar_to`` as an ``OR`` of the block probes (columns mode): each shard task then plans
    a bitmap ``OR`` rather than a semi-join over a union (12 instead of 16 to 20 ms at 32 shards)."""

    rows_by_key = True
    """``find_original`` reads its candidates' rows by key, in a statement Citus routes to the
    shards holding them (a task per shard holding a candidate, not one per shard: BENCHMARKS.md)."""

    def row_estimate_sql(self, table: str) -> str:
        """The rows of a table in Citus's metadata (distributed, reference or Citus-local),
        as :data:`SHARD_ROWS_SQL` sums its shards' estimates: the coordinator's shell of such a
        table is empty, so ``pg_class`` says 0 there. Other tables: the planner's estimate."""
        name = _literal(table)
        return (
            f"(CASE WHEN EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = to_regclass({name})) "
            f"THEN ({SHARD_ROWS_SQL.format(name=name)}) ELSE {super().row_estimate_sql(table)} END)"
        )

    @classmethod
    def detect(cls, connection: Connection) -> bool:
        found = connection.execute(text("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')"))
        return bool(found.scalar_one())

    def set_timeouts(self, connection: Connection, lock: str | None, statement: str | None, local: bool) -> None:
        """The time bounds, and Citus's settings for DDL on distributed tables with them."""
        super().set_timeouts(connection, lock, statement, local)
        self.set_citus(connection, local)

    def distribute(self, connection: Connection, schema: str, table: str, column: str | None, side: str | None) -> None:
        """:data:`SETTINGS` for this transaction, then :func:`distribute_sql`'s statements."""
        self.set_citus(connection, local=True)
        for sql, params in distribute_sql(schema, table, column, side):
            execute_sql(connection, sql, params)

    def set_citus(self, connection: Connection, local: bool = True) -> None:
        """:data:`SETTINGS` (``local``: until the transaction ends)."""
        for name, value in SETTINGS.items():
            connection.execute(text("SELECT set_config(:n, :v, :l)"), {"n": name, "v": value, "l": local})

    def reset_timeouts(self, connection: Connection) -> None:
        super().reset_timeouts(connection)
        for name in SETTINGS:
            execute_sql(connection, f"RESET {name}")

    def dependents(self, connection: Connection, schema: str, table: str, columns: Sequence[str], own: Sequence[str]) -> list[str]:
        """PostgreSQL's, less the ``truncate_trigger_<oid>`` Citus puts on every distributed
        table (dropped with it, not the user's)."""
        found = super().dependents(connection, schema, table, columns, own)
        return [d for d in found if not CITUS_TRUNCATE_TRIGGER.match(d)]

    def materialize_self_join(self) -> bool:
        """A pair of near-duplicates may sit on any two shards, and Citus's repartition joins
        (the block-column self-joins, with ``citus.enable_repartition_joins``) took 45 s for
        250 rows on two workers: the keys and fingerprints are read once from the shards
        instead, and the coordinator hash-joins them on the masks like one PostgreSQL."""
        return True

    def batch_sql(self, job: Job) -> CitusBatchSQL:
        return CitusBatchSQL(job)


__all__ = ["CITUS_DDL", "CitusBackend", "CitusBatchSQL", "CitusDDL", "SETTINGS", "SHARD_ROWS_SQL", "colocate_sql", "distribute_sql"]
