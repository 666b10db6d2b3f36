"""Tables the database tests build, and what they compare before and after, on every server.

One builder per kind of table, written once: where PostgreSQL and MySQL/MariaDB need different
SQL, the builder asks the engine which server it is on, so a test parametrized over
``any_engine`` (tests/conftest.py) reads the same on both. Fingerprints are always compared as
Python computes them (unsigned), whatever the server stores.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, insert, text, update

import simsql
import simsql.alembic
import simsql.bits
import simsql.store
from simsql import Fingerprinter
from simsql.bits import hamming
from simsql.lifecycle import attach as operations
from simsql.store.storage import join_text, text_digest
from simsql.text.fingerprint import DEFAULT

WORDS = (
    "index query planner vacuum replication backup schema table column tuple page buffer transaction lock "
    "snapshot isolation commit rollback cursor join aggregate window partition trigger function sequence"
).split()
ROWS = 3000


def is_mysql(engine: Engine | Connection) -> bool:
    return engine.dialect.name in ("mysql", "mariadb")


def unsigned(engine: Engine | Connection, value: int | None) -> int | None:
    """A fingerprint read by raw SQL, as Python computes it: PostgreSQL stores it signed,
    MySQL/MariaDB unsigned (``simsql.bits.to_unsigned`` refuses what is already unsigned)."""
    return value if value is None or is_mysql(engine) else simsql.bits.to_unsigned(value)


def run(engine: Engine, *statements: str) -> None:
    """Raw SQL statements in one transaction."""
    with engine.begin() as connection:
        for statement in statements:
            connection.execute(text(statement))


def within(seconds: float, work: Callable[[], Any]) -> BaseException | None:
    """Run ``work`` in a thread; fail the test if it is still waiting after ``seconds``.
    Returns what it raised, if anything."""
    outcome: dict[str, BaseException | None] = {"error": None}

    def target() -> None:
        try:
            work()
        except BaseException as error:  # noqa: BLE001 - handed back to the test
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds} s"
    return outcome["error"]


def explain(connection: Connection) -> str:
    """EXPLAIN as a table of rows on MySQL/MariaDB: MySQL 9's default format can be TREE
    (``explain_format``); MariaDB knows no FORMAT=TRADITIONAL, and its plain EXPLAIN is the table."""
    return "EXPLAIN " if getattr(connection.dialect, "is_mariadb", False) else "EXPLAIN FORMAT=TRADITIONAL "


def add_simhash(engine: Engine, table: str, source: tuple[str, ...] = ("title", "body"), **options: Any) -> None:
    """simsql's registry, then its Alembic operation on ``table`` (columns and trigger, no
    indexes), as a migration would run it."""
    simsql.alembic.upgrade(engine)
    with engine.begin() as connection:
        operations.add_simhash(connection, table, list(source), **options)


def fingerprints_by(engine: Engine, sql: str) -> dict[Any, int | None]:
    """``{first column: second column as an unsigned fingerprint}`` of the rows of ``sql``."""
    with engine.connect() as connection:
        return {row[0]: unsigned(engine, row[1]) for row in connection.execute(text(sql))}

# -- docs: many rows of random text, for writers, refingerprint and backgrounds ----------------


def random_text(rng: random.Random) -> str | None:
    """40 words, common and rare, or (one time in fifty) no text at all."""
    if rng.random() < 0.02:
        return None
    return " ".join(rng.choice(WORDS) if rng.random() < 0.4 else f"w{rng.randrange(100_000)}" for _ in range(40))


def build_docs(engine: Engine, rows: int = ROWS) -> None:
    """A ``docs`` table (id, title, body) of ``rows`` rows, in SQL every server takes."""
    rng = random.Random(5)
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE docs (id int PRIMARY KEY, title text, body text)"))
        connection.execute(
            text("INSERT INTO docs VALUES (:id, :title, :body)"),
            [{"id": i, "title": f"doc {i}", "body": random_text(rng)} for i in range(1, rows + 1)],
        )


def writer(engine: Engine, seed: int, stop: threading.Event, counts: dict[str, int], table: str = "docs", rows: int = ROWS) -> None:
    """Updates, inserts and deletes on ``table`` in small transactions, some touching several
    rows, until ``stop`` is set; ``counts["writes"]`` counts the transactions."""
    rng = random.Random(seed)
    insert = (
        f"INSERT INTO {table} (id, title, body) VALUES (:id, 'new', :b) "
        + ("ON DUPLICATE KEY UPDATE id = id" if is_mysql(engine) else "ON CONFLICT DO NOTHING")
    )
    with engine.connect() as connection:
        while not stop.is_set():
            kind = rng.random()
            if kind < 0.8:
                for key in sorted(rng.sample(range(1, rows + 1), rng.choice((1, 1, 3)))):
                    connection.execute(text(f"UPDATE {table} SET body = :b WHERE id = :id"), {"b": random_text(rng), "id": key})
            elif kind < 0.9:
                connection.execute(text(insert), {"id": rows + 1 + rng.randrange(10_000), "b": random_text(rng)})
            else:
                connection.execute(text(f"DELETE FROM {table} WHERE id = :id"), {"id": rng.randrange(1, rows + 1)})
            connection.commit()
            counts["writes"] += 1


def rewrite(engine: Engine, keys: tuple[int, ...], table: str = "docs") -> None:
    """A writer's UPDATE of ``keys``' text (to text with words): the triggers clear their fingerprints."""
    with engine.begin() as connection:
        for key in keys:
            connection.execute(text(f"UPDATE {table} SET body = :b WHERE id = :id"), {"b": f"rewritten by a writer, row {key}", "id": key})


def holder_sql(side_table: bool, table: str = "docs") -> str:
    """(key, title, body, fingerprint, digest) of every row of an attached ``table``."""
    if side_table:
        return f"SELECT d.id, d.title, d.body, s.simhash, s.simhash_src FROM {table} d LEFT JOIN {table}_simhash s ON s.id = d.id"
    return f"SELECT id, title, body, simhash, simhash_src FROM {table}"


def check_fingerprints(engine: Engine, sql: str, fingerprinter: Fingerprinter = DEFAULT) -> tuple[int, int]:
    """Every stored fingerprint is ``fingerprinter``'s of the row's current text (rows of
    ``sql``: key, title, body, fingerprint, ...). Returns (rows with text, rows with a fingerprint)."""
    with engine.connect() as connection:
        rows = connection.execute(text(sql)).all()
    with_text = fingerprinted = 0
    for key, title, body, fingerprint, *_ in rows:
        parts = [p for p in (title, body) if p is not None]
        wanted = fingerprinter.fingerprint("\n".join(parts)) if parts else None
        with_text += wanted is not None
        if fingerprint is not None:
            fingerprinted += 1
            assert unsigned(engine, fingerprint) == wanted, f"row {key}: not {fingerprinter.config_id} of its current text"
    return with_text, fingerprinted


def config_id(engine: Engine, table: str) -> str:
    """The configuration simsql's registry records for ``table``."""
    with engine.connect() as connection:
        return str(connection.execute(text("SELECT config_id FROM simsql_registry WHERE table_name = :t"), {"t": table}).scalar_one())


def progress(engine: Engine, table: str) -> tuple[int, list[Any] | None, str] | None:
    """A backfill's saved cursor for ``table``: (rows done, last key, phase), or None."""
    with engine.connect() as connection:
        row = connection.execute(
            text("SELECT rows_done, last_key, phase FROM simsql_backfill WHERE table_name = :t"), {"t": table}
        ).first()
    if row is None:
        return None
    last_key = json.loads(row.last_key) if isinstance(row.last_key, str) else row.last_key  # JSON text on MySQL
    return row.rows_done, last_key, row.phase


def rows_done(engine: Engine, table: str) -> int | None:
    """The rows a backfill of ``table`` has saved as done (:func:`progress`), or None."""
    saved = progress(engine, table)
    return None if saved is None else saved[0]


def wait_for_rows(engine: Engine, process: Any, rows: int, table: str = "articles", seconds: float = 30) -> None:
    """Until a backfill run by ``process`` has committed ``rows`` rows, failing if it ends first."""
    deadline = time.monotonic() + seconds
    while (saved := progress(engine, table)) is None or saved[0] < rows:
        assert process.poll() is None, f"backfill ended before it could be stopped: {process.communicate()}"
        assert time.monotonic() < deadline, "backfill made no progress"
        time.sleep(0.01)


KILL_ROWS = 30_000  # rows of the tables a backfill is killed on


def build_big_articles(engine: Engine) -> None:
    """30,000 articles generated by PostgreSQL itself (fast); every 97th has no text at all."""
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE articles (id serial PRIMARY KEY, title varchar(200), body text)"))
        connection.execute(
            text(
                "INSERT INTO articles (title, body) SELECT "
                "CASE WHEN g % 97 = 0 THEN NULL ELSE 'title ' || g END, "
                "CASE WHEN g % 97 = 0 THEN NULL ELSE (SELECT string_agg('w' || floor(random() * 50000)::int, ' ') "
                "FROM generate_series(1, 100 + g % 2 - g % 2)) END "
                "FROM generate_series(1, :n) AS g"
            ),
            {"n": KILL_ROWS},
        )


# -- a live application table: its own index, trigger, child table, view ---------------------


def _words(seed: int, count: int = 80) -> str:
    rng = random.Random(seed)
    vocabulary = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "sigma", "river", "bank", "fox",
                  "dog", "quick", "brown", "index", "query"]  # fmt: skip
    return " ".join(f"{rng.choice(vocabulary)}{rng.randint(0, 99)}" for _ in range(count))


BODIES = {
    1: _words(3),
    2: _words(3) + " again",  # a near-duplicate of 1 (2 bits apart with its title)
    3: _words(4),
    4: _words(5),
    5: None,
}

_MYSQL_LIVE_DOCS = (
    "CREATE TABLE notes (id INT PRIMARY KEY, doc_id INT NOT NULL, FOREIGN KEY (doc_id) REFERENCES docs (id) ON DELETE CASCADE)",
    "CREATE TRIGGER docs_edited BEFORE INSERT ON docs FOR EACH ROW SET NEW.edited = 0",
    "CREATE VIEW doc_titles AS SELECT id, title FROM docs",
)
_POSTGRESQL_LIVE_DOCS = (
    "CREATE TABLE docs (id serial PRIMARY KEY, title varchar(200), body text, edited int NOT NULL DEFAULT 0)",
    "CREATE INDEX docs_title ON docs (title)",
    "CREATE TABLE notes (id int PRIMARY KEY, doc_id int NOT NULL REFERENCES docs (id) ON DELETE CASCADE)",
    "CREATE FUNCTION docs_edited() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.edited := 0; RETURN NEW; END $$",
    "CREATE TRIGGER docs_edited BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION docs_edited()",
    "CREATE VIEW doc_titles AS SELECT id, title FROM docs",
)


def build_live_docs(engine: Engine, extra: str = "", options: str = "") -> None:
    """The table an application already has, five rows of ``BODIES`` (1 and 2 near-duplicates, 5
    without text): its own index, trigger, a child table with a foreign key, a view. On MySQL,
    ``extra``: more definitions in the CREATE TABLE; ``options``: table options."""
    if is_mysql(engine):
        run(
            engine,
            "CREATE TABLE docs (id INT AUTO_INCREMENT PRIMARY KEY, title VARCHAR(200), body TEXT, "
            f"edited INT NOT NULL DEFAULT 0, KEY docs_title (title){extra}) {options}",
            *_MYSQL_LIVE_DOCS,
        )
    else:
        assert not extra and not options, "extra and options are MySQL's table definitions"
        run(engine, *_POSTGRESQL_LIVE_DOCS)
    with engine.begin() as connection:
        for key, body in BODIES.items():
            connection.execute(
                text("INSERT INTO docs (id, title, body) VALUES (:i, :t, :b)"),
                {"i": key, "t": None if body is None else "title", "b": body},
            )


def _mysql_state(connection: Connection, table: str) -> dict[str, Any]:
    tables = sorted(connection.execute(text("SHOW TABLES")).scalars())
    return {
        "create": connection.execute(text(f"SHOW CREATE TABLE {table}")).one()[1],
        "checksum": connection.execute(text(f"CHECKSUM TABLE {table}")).one()[1],
        "triggers": sorted(connection.execute(text("SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()")).scalars()),
        "tables": tables,
    }


def _postgresql_state(connection: Connection, table: str) -> dict[str, Any]:
    schema = "relnamespace = CAST(current_schema() AS regnamespace)"
    catalog = {
        "columns": "SELECT attname, format_type(atttypid, atttypmod), attnotnull, pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute "
                   "LEFT JOIN pg_attrdef d ON d.adrelid = attrelid AND d.adnum = attnum "
                   "WHERE attrelid = CAST(:t AS regclass) AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
        "indexes": "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = :t AND schemaname = current_schema() ORDER BY 1",
        "constraints": "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
                       "WHERE conrelid = CAST(:t AS regclass) OR confrelid = CAST(:t AS regclass) ORDER BY 1",
    }  # fmt: skip
    return {
        "create": {name: connection.execute(text(sql), {"t": table}).all() for name, sql in catalog.items()},
        "checksum": connection.execute(text(f"SELECT md5(string_agg(CAST(t AS text), '|' ORDER BY id)) FROM {table} AS t")).scalar(),
        "triggers": sorted(connection.execute(text(
            f"SELECT tgname FROM pg_trigger JOIN pg_class c ON c.oid = tgrelid WHERE NOT tgisinternal AND c.{schema}"
        )).scalars()),
        "tables": sorted(connection.execute(text(f"SELECT relname FROM pg_class WHERE relkind IN ('r', 'p', 'v') AND {schema}")).scalars()),
        "functions": sorted(connection.execute(text(
            "SELECT proname FROM pg_proc WHERE pronamespace = CAST(current_schema() AS regnamespace)"
        )).scalars()),
    }


def state(engine: Engine, table: str = "docs") -> dict[str, Any]:
    """What a user would compare: the table's definition and checksum, every trigger and table
    of the test's schema (and on PostgreSQL every function), simsql's registry rows (None
    without a registry)."""
    with engine.connect() as connection:
        found = _mysql_state(connection, table) if is_mysql(engine) else _postgresql_state(connection, table)
        found["registry"] = (
            sorted(connection.execute(text("SELECT table_name, column_name FROM simsql_registry")).all())
            if "simsql_registry" in found["tables"] else None
        )
    return found


def fingerprint_by_hand(engine: Engine, side: str | None = None, prefix: str = "simhash") -> None:
    """What a backfill does, by hand: each row of ``docs`` gets its fingerprint and the digest
    of its text, written as each server stores them (PostgreSQL: signed, a uuid)."""
    mysql = is_mysql(engine)
    with engine.begin() as connection:
        for key, title, body in connection.execute(text("SELECT id, title, body FROM docs")).all():
            joined = join_text([title, body])
            if joined is None:
                continue
            fingerprint, digest = DEFAULT.fingerprint_many([joined], empty="none")[0], text_digest(joined)
            values = {"fp": fingerprint if mysql else simsql.bits.to_signed(fingerprint), "src": digest.hex if mysql else digest, "id": key}
            if side is None:
                connection.execute(text(f"UPDATE docs SET {prefix} = :fp, {prefix}_src = :src WHERE id = :id"), values)
            else:
                connection.execute(text(f"INSERT INTO {side} (id, {prefix}, {prefix}_src) VALUES (:id, :fp, :src)"), values)


def neighbours(engine: Engine, key: int) -> list[tuple[int, int]]:
    """The three rows of ``docs`` most similar to row ``key``: (key, distance)."""
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    with Session(engine) as session:
        model = simsql.reflect(session.connection(), "docs")
        target = session.get(model, key)
        rows = session.execute(simsql.most_similar(select(model), target, limit=3)).all()
        return [(row[0].id, int(row[1])) for row in rows]


def groups(engine: Engine) -> list[list[Any]]:
    """The near-duplicate groups of ``docs`` (within 3 bits)."""
    from sqlalchemy.orm import Session

    with Session(engine) as session:
        model = simsql.reflect(session.connection(), "docs")
        return simsql.duplicate_groups(session, model, max_distance=3)


# -- mapped tables filled by raw SQL, as a bulk loader leaves them ------------------------------


def create_models(engine: Engine, *models: type) -> None:
    """simsql's registry and progress tables, then the models' tables (with their triggers, and
    their side tables)."""
    from simsql.schema.names import metadata as simsql_metadata

    simsql_metadata.create_all(engine)
    tables = []
    for model in models:
        tables.append(model.__table__)  # type: ignore[attr-defined]
        binding = simsql.store.binding_for(model)
        if binding.mode == "side_table":
            tables.append(binding.table)
    next(iter(tables)).metadata.create_all(engine, tables=tables)


def insert_rows(engine: Engine, model: type, rows: list[dict[str, Any]]) -> None:
    """Rows written by raw SQL: no fingerprint (nothing in this path computes one)."""
    table: Any = model.__table__  # type: ignore[attr-defined]
    columns = list(rows[0])
    sql = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join(':' + c for c in columns)})"
    with engine.begin() as connection:
        for start in range(0, len(rows), 2000):
            connection.execute(text(sql), rows[start : start + 2000])


def texts(n: int, seed: int = 3) -> list[dict[str, Any]]:
    """Rows (id, title, body) with every kind of text: plain, non-ASCII, title or body missing,
    both missing, empty, and text without any feature."""
    rng = random.Random(seed)
    odd = {0: (None, None), 1: ("", None), 2: (None, ""), 3: ("!!! ...", None), 4: ("Ünïcödé 中文 ok", None), 5: ("title only", None)}
    rows = []
    for i in range(1, n + 1):
        title, body = odd.get(i % 23, (f"title {i}", " ".join(rng.choice(WORDS) if rng.random() < 0.5 else f"w{rng.randrange(10**5)}" for _ in range(30))))
        rows.append({"id": i, "title": title, "body": body})
    return rows


def expected(model: type, *parts: str | None) -> int | None:
    """What Python computes for a row's text (None: no text, or no features)."""
    from simsql.errors import EmptyDocument

    present = [p for p in parts if p is not None]
    if not present:
        return None
    try:
        return simsql.store.binding_for(model).fingerprinter.fingerprint("\n".join(present))
    except EmptyDocument:
        return None


def stored(engine: Engine, model: type) -> list[tuple[Any, ...]]:
    """(key..., source values..., fingerprint (unsigned), digest) of every row of ``model``."""
    binding = simsql.store.binding_for(model)
    table: Any = model.__table__  # type: ignore[attr-defined]
    keys = [c.name for c in table.primary_key.columns]
    columns = ", ".join(f"b.{c}" for c in [*keys, *binding.source_columns])
    if binding.mode == "columns":
        sql = f"SELECT {columns}, b.simhash, b.simhash_src FROM {table.name} b"
    else:
        on = " AND ".join(f"s.{k} = b.{k}" for k in keys)
        sql = f"SELECT {columns}, s.simhash, s.simhash_src FROM {table.name} b LEFT JOIN {binding.table.name} s ON {on}"
    with engine.connect() as connection:
        rows = [tuple(row) for row in connection.execute(text(sql))]
    return [(*row[:-2], unsigned(engine, row[-2]), row[-1]) for row in rows]


def check_model(engine: Engine, model: type, *, complete: bool = True) -> tuple[int, int]:
    """No stored fingerprint differs from Python's for the row's current text; with
    ``complete``, every row with features has one. Returns (rows with features, stored)."""
    source = len(simsql.store.binding_for(model).source_columns)
    featured = kept = 0
    for row in stored(engine, model):
        values, fingerprint = row[-2 - source : -2], row[-2]
        wanted = expected(model, *values)
        featured += wanted is not None
        if fingerprint is not None:
            kept += 1
            assert fingerprint == wanted, f"row {row[: -2 - source]} keeps a fingerprint of text it no longer holds"
        elif complete:
            assert wanted is None, f"row {row[: -2 - source]} has text but no fingerprint"
    return featured, kept


def stop_after(batches: int) -> Callable[[int, int], None]:
    """A progress callback that interrupts the run (as Ctrl-C would) after ``batches`` batches."""
    calls: list[int] = []

    def interrupt(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == batches:
            raise KeyboardInterrupt

    return interrupt


def load_fingerprints(engine: Engine, model: type, fingerprints: list[int | None]) -> None:
    """Rows with given fingerprints, written with Core (no ORM events), as bulk loads would."""
    binding = simsql.store.binding_for(model)
    rows = [{"id": i + 1, "title": f"row {i + 1}", "body": None, "category": "even" if i % 2 else "odd"} for i in range(len(fingerprints))]
    signed = [None if fp is None else simsql.bits.to_signed(fp) for fp in fingerprints]
    with engine.begin() as connection:
        connection.execute(insert(model.__table__), rows)
        if binding.mode == "columns" and is_mysql(engine):
            statement = update(model.__table__).where(model.__table__.c.id == bindparam("row_id"))
            connection.execute(statement.values(simhash=bindparam("fp")), [{"row_id": r["id"], "fp": fp} for r, fp in zip(rows, fingerprints)])
        elif binding.mode == "columns":
            connection.execute(
                text("UPDATE articles SET simhash = v.fp FROM unnest(CAST(:ids AS int[]), CAST(:fps AS bigint[])) AS v(id, fp) WHERE articles.id = v.id"),
                {"ids": [r["id"] for r in rows], "fps": signed},
            )
        else:
            connection.execute(insert(binding.table), [{"id": r["id"], "simhash": fp} for r, fp in zip(rows, fingerprints)])
        connection.execute(text(f"ANALYZE {'TABLE ' if is_mysql(engine) else ''}{binding.table.name}"))


def brute_force(fingerprints: list[int | None], query: int, limit: int, max_distance: int | None, keep: Any = None) -> list[tuple[int, int]]:
    """(key, distance) of the ``limit`` rows nearest ``query`` (ties by key), rows kept by ``keep``
    and within ``max_distance``: what every exact ranking must return (keys are positions + 1)."""
    ranked = sorted(
        (hamming(fp, query), i + 1)
        for i, fp in enumerate(fingerprints)
        if fp is not None and (keep is None or keep(i + 1))
    )
    if max_distance is not None:
        ranked = [r for r in ranked if r[0] <= max_distance]
    return [(key, d) for d, key in ranked[:limit]]
