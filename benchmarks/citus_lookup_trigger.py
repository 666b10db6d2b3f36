"""Can a row trigger keep a block lookup table exact on Citus (issue 24)? Raw SQL (psycopg).

A base table ``(id, simhash, simhash_b0..b3)`` distributed by ``id`` over ``--shards`` shards, a
lookup table ``(block, value, id, simhash)`` distributed by ``block`` (4 shards, its own
co-location group: the lookup ``benchmarks.citus_lookup`` times), and an ``AFTER INSERT OR
UPDATE OR DELETE`` row trigger on the base table that deletes the row's old lookup rows and
inserts its new ones. The trigger runs on the base table's shards, on the workers, and writes
another distributed table from there: Citus refuses that ("cannot execute a distributed query
from a query on a shard") unless the function carries ``citus.allow_nested_distributed_execution
= on``, which this script sets on it (``--nested``; without it, it prints the refusal and stops).

    python -m benchmarks.citus_lookup_trigger --citus postgresql://postgres@127.0.0.1:9700/postgres \\
        --rows 20000 --writers 4 --statements 200 [--nested]

Prints rows per second of ``INSERT ... SELECT`` batches without and with the trigger (the
servers are the same, the two taking turns batch by batch), then runs ``--writers`` concurrent
raw writers (multi-row INSERT, UPDATE of fingerprints, DELETE, and short transactions mixing
them; each statement over a random range of keys, so statements span both workers), and
compares the lookup table with the base table's rows (a lookup row missing, or one left over).
Errors the writers met are counted by their first line (a worker that crashed shows as a lost
connection). Its schema ``simsql_lookup_trigger`` is dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import random
import threading
import time
from collections import Counter
from typing import Any

import psycopg

SCHEMA = "simsql_lookup_trigger"
TRIGGER = f"""
CREATE FUNCTION {SCHEMA}.keep_lookup() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' AND OLD.simhash IS NOT NULL AND (TG_OP = 'DELETE' OR NEW.simhash IS DISTINCT FROM OLD.simhash) THEN
    DELETE FROM {SCHEMA}.lookup WHERE (block, value, id) IN
      ((0, OLD.simhash_b0, OLD.id), (1, OLD.simhash_b1, OLD.id), (2, OLD.simhash_b2, OLD.id), (3, OLD.simhash_b3, OLD.id));
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.simhash IS NOT NULL AND (TG_OP = 'INSERT' OR NEW.simhash IS DISTINCT FROM OLD.simhash) THEN
    INSERT INTO {SCHEMA}.lookup VALUES (0, NEW.simhash_b0, NEW.id, NEW.simhash), (1, NEW.simhash_b1, NEW.id, NEW.simhash),
      (2, NEW.simhash_b2, NEW.id, NEW.simhash), (3, NEW.simhash_b3, NEW.id, NEW.simhash);
  END IF;
  RETURN NULL;
END $$"""
BLOCKS = ", ".join(f"CAST((s >> {48 - 16 * i}) & 65535 AS integer)" for i in range(4))
INSERT = (
    f"INSERT INTO {SCHEMA}.{{table}} SELECT g, s, {BLOCKS} FROM (SELECT g, (hashint8(g) * 2654435761 + %(salt)s) AS s "
    "FROM generate_series(CAST(%(low)s AS bigint), CAST(%(high)s AS bigint)) AS g) AS r ON CONFLICT (id) DO NOTHING"
)
CHECK = f"""
WITH lookup AS MATERIALIZED (SELECT block, value, id, simhash FROM {SCHEMA}.lookup),
     base AS MATERIALIZED (SELECT * FROM {SCHEMA}.base WHERE simhash IS NOT NULL),
     wanted AS (SELECT 0 AS block, simhash_b0 AS value, id, simhash FROM base UNION ALL SELECT 1, simhash_b1, id, simhash FROM base
                UNION ALL SELECT 2, simhash_b2, id, simhash FROM base UNION ALL SELECT 3, simhash_b3, id, simhash FROM base)
SELECT (SELECT count(*) FROM wanted), (SELECT count(*) FROM (SELECT * FROM wanted EXCEPT SELECT * FROM lookup) AS m),
       (SELECT count(*) FROM (SELECT * FROM lookup EXCEPT SELECT * FROM wanted) AS x)"""


def setup(connection: psycopg.Connection[Any], shards: int, nested: bool) -> None:
    connection.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    connection.execute(f"CREATE SCHEMA {SCHEMA}")
    columns = "(id bigint PRIMARY KEY, simhash bigint, simhash_b0 integer, simhash_b1 integer, simhash_b2 integer, simhash_b3 integer)"
    for table in ("base", "plain_base"):  # plain_base: the same table without the trigger
        connection.execute(f"CREATE TABLE {SCHEMA}.{table} {columns}")
        connection.execute(f"SELECT create_distributed_table('{SCHEMA}.{table}', 'id', shard_count => {shards})")
    connection.execute(
        f"CREATE TABLE {SCHEMA}.lookup (block smallint NOT NULL, value integer NOT NULL, id bigint NOT NULL, "
        "simhash bigint NOT NULL, PRIMARY KEY (block, value, id) INCLUDE (simhash))"
    )
    connection.execute(f"SELECT create_distributed_table('{SCHEMA}.lookup', 'block', colocate_with => 'none', shard_count => 4)")
    connection.execute(TRIGGER)
    if nested:
        connection.execute(f"ALTER FUNCTION {SCHEMA}.keep_lookup() SET citus.allow_nested_distributed_execution = on")
    connection.execute("SET citus.enable_unsafe_triggers = on")
    connection.execute(
        f"CREATE TRIGGER keep_lookup AFTER INSERT OR UPDATE OR DELETE ON {SCHEMA}.base FOR EACH ROW EXECUTE FUNCTION {SCHEMA}.keep_lookup()"
    )


def insert_rate(connection: psycopg.Connection[Any], rows: int, batch: int) -> dict[str, float]:
    """Rows per second of ``INSERT ... SELECT`` batches into the table without and with the trigger."""
    spent = {"plain_base": 0.0, "base": 0.0}
    for low in range(1, rows + 1, batch):
        for table in random.sample(list(spent), 2):
            started = time.perf_counter()
            connection.execute(INSERT.format(table=table), {"low": low, "high": min(rows, low + batch - 1), "salt": 0})
            spent[table] += time.perf_counter() - started
    return {table: rows / seconds for table, seconds in spent.items()}


def writer(url: str, seed: int, statements: int, rows: int, errors: Counter[str]) -> None:
    rng = random.Random(seed)
    with psycopg.connect(url, autocommit=True) as connection:
        for n in range(statements):
            low = rng.randrange(1, rows)
            bounds = {"low": low, "high": low + rng.randrange(0, 40), "salt": seed * 1000 + n}
            kind = rng.choice(["insert", "update", "delete", "transaction"])
            try:
                if kind == "insert":
                    connection.execute(INSERT.format(table="base"), bounds)
                elif kind == "update":
                    connection.execute(
                        f"UPDATE {SCHEMA}.base SET simhash = simhash + 1, simhash_b3 = (simhash_b3 + 1) & 65535 "
                        "WHERE id BETWEEN %(low)s AND %(high)s", bounds,
                    )  # fmt: skip
                elif kind == "delete":
                    connection.execute(f"DELETE FROM {SCHEMA}.base WHERE id BETWEEN %(low)s AND %(high)s", bounds)
                else:
                    with connection.transaction():
                        connection.execute(f"UPDATE {SCHEMA}.base SET simhash = NULL WHERE id = %(low)s", bounds)
                        connection.execute(f"UPDATE {SCHEMA}.base SET simhash = 7, simhash_b3 = 7 WHERE id = %(high)s", bounds)
                        connection.execute(f"DELETE FROM {SCHEMA}.base WHERE id = %(low)s + 1", bounds)
            except psycopg.Error as error:
                errors[f"{kind}: {str(error).splitlines()[0]}"] += 1
                if connection.closed:
                    return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--citus", required=True, help="libpq URL of the coordinator")
    parser.add_argument("--shards", type=int, default=32)
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--statements", type=int, default=200)
    parser.add_argument("--nested", action="store_true", help="set citus.allow_nested_distributed_execution on the trigger")
    arguments = parser.parse_args()
    with psycopg.connect(arguments.citus, autocommit=True) as connection:
        setup(connection, arguments.shards, arguments.nested)
        try:
            try:
                rates = insert_rate(connection, arguments.rows, arguments.batch)
            except psycopg.errors.InternalError_ as error:  # Citus raises it as XX000
                print(f"the trigger is refused: {error}")
                return
            print(f"insert rows/s ({arguments.shards} shards, batches of {arguments.batch}): without the trigger "
                  f"{rates['plain_base']:.0f}, with it {rates['base']:.0f} ({rates['base'] / rates['plain_base']:.2f}x)")  # fmt: skip
            errors: Counter[str] = Counter()
            started = time.perf_counter()
            threads = [
                threading.Thread(target=writer, args=(arguments.citus, seed, arguments.statements, arguments.rows, errors))
                for seed in range(arguments.writers)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            print(f"{arguments.writers} writers x {arguments.statements} statements: {time.perf_counter() - started:.1f} s")
            for message, count in errors.most_common():
                print(f"  {count} x {message}")
            time.sleep(2)
            with psycopg.connect(arguments.citus, autocommit=True) as fresh:
                fresh.execute("SELECT recover_prepared_transactions()")
                wanted, missing, extra = fresh.execute(CHECK).fetchone() or (0, 0, 0)
            print(f"lookup rows wanted {wanted}: missing {missing}, left over {extra}")
        finally:
            with psycopg.connect(arguments.citus, autocommit=True) as fresh:
                fresh.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    print(f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())} (1, 5, 15 min)")


if __name__ == "__main__":
    main()
