"""Attaching simsql to a legacy database built with plain SQL, and taking it away again."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, String, Text, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.alembic
import simsql.bits
import simsql.text.fingerprint
from simsql.errors import ConfigMismatch, SchemaError
from simsql.lifecycle import attach as operations
from simsql.store import registry

LEGACY_APP = Path(__file__).parent / "legacy_app"

WORDS = (
    "database index query planner vacuum replication backup schema table column tuple page buffer "
    "transaction lock snapshot isolation commit rollback cursor join aggregate window partition "
    "trigger function sequence constraint foreign primary unique check default extension operator"
).split()


def _article(rng: random.Random, n: int = 120) -> str:
    """Topical words plus a large vocabulary, so unrelated articles are far apart."""
    return " ".join(rng.choice(WORDS) if rng.random() < 0.3 else f"w{rng.randrange(50_000)}" for _ in range(n))


def build_legacy(engine: Engine, rows: int = 400) -> dict[int, str]:
    """The database an application already has: plain SQL, foreign keys, an index, data."""
    rng = random.Random(11)
    bodies: dict[int, str] = {}
    with engine.begin() as connection:
        connection.execute(
            text(
                "CREATE TABLE articles (id serial PRIMARY KEY, title varchar(200), body text, "
                "created_at timestamptz NOT NULL DEFAULT now())"
            )
        )
        connection.execute(text("CREATE INDEX articles_created_at ON articles (created_at)"))
        connection.execute(text("CREATE TABLE comments (id serial PRIMARY KEY, article_id int NOT NULL REFERENCES articles(id) ON DELETE CASCADE, body text)"))
        for i in range(1, rows + 1):
            if i % 50 == 0:
                body = None
            elif i % 10 == 0:
                body = bodies[i - 1] + " " + rng.choice(WORDS)  # a near-duplicate of the previous
            else:
                body = _article(rng)
            bodies[i] = body
            connection.execute(
                text("INSERT INTO articles (title, body, created_at) VALUES (:t, :b, '2024-01-01')"),
                {"t": None if body is None else f"title {i}", "b": body},
            )
            connection.execute(text("INSERT INTO comments (article_id, body) VALUES (:a, 'nice')"), {"a": i})
    return bodies


def snapshot(engine: Engine, table: str = "articles") -> dict[str, object]:
    """The catalog of a table and a checksum of its rows."""
    with engine.connect() as connection:
        columns = connection.execute(
            text(
                "SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute "
                "WHERE attrelid = CAST(:t AS regclass) AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
            ),
            {"t": table},
        ).all()
        indexes = connection.execute(
            text("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = :t AND schemaname = current_schema() ORDER BY 1"),
            {"t": table},
        ).all()
        constraints = connection.execute(
            text("SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = CAST(:t AS regclass) OR confrelid = CAST(:t AS regclass) ORDER BY 1"),
            {"t": table},
        ).all()
        triggers = connection.execute(
            text("SELECT tgname FROM pg_trigger WHERE tgrelid = CAST(:t AS regclass) AND NOT tgisinternal ORDER BY 1"),
            {"t": table},
        ).all()
        checksum = connection.execute(
            text(f"SELECT md5(string_agg(CAST(t AS text), '|' ORDER BY id)) FROM {table} AS t")
        ).scalar()
    return {"columns": columns, "indexes": indexes, "constraints": constraints, "triggers": triggers, "checksum": checksum}


def app_config(connection, schema: str) -> Config:  # type: ignore[no-untyped-def]
    cfg = Config()
    cfg.set_main_option("script_location", str(LEGACY_APP))
    cfg.set_main_option("version_locations", str(LEGACY_APP / "versions"))  # the application's own only
    cfg.set_main_option("path_separator", "os")
    cfg.attributes["connection"] = connection
    return cfg


class Base(DeclarativeBase):
    pass


class LegacyArticle(simsql.SimHashMixin, Base):
    """The application's model once it adopts simsql on the migrated table."""

    __tablename__ = "articles"
    __simhash_source__ = ("title", "body")
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)


def _check_attached(engine: Engine, bodies: dict[int, str]) -> None:
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT id, title, body, simhash, simhash_b0, simhash_b1, simhash_b2, simhash_b3 FROM articles ORDER BY id")).all()
    for row in rows:
        if row.body is None:
            assert row.simhash is None and row.simhash_b0 is None
            continue
        expected = simsql.text.fingerprint.simhash(f"{row.title}\n{row.body}")
        assert simsql.bits.to_unsigned(row.simhash) == expected
        assert (row.simhash_b0, row.simhash_b1, row.simhash_b2, row.simhash_b3) == simsql.bits.blocks(expected)


def test_attach_backfill_query_downgrade_with_application_history(engine: Engine, schema: str) -> None:
    bodies = build_legacy(engine)
    before = snapshot(engine)
    with engine.connect() as connection:
        command.upgrade(app_config(connection, schema), "app_0001")
        connection.commit()
        command.upgrade(app_config(connection, schema), "heads")
        connection.commit()
        heads = set(connection.execute(text("SELECT version_num FROM alembic_version")).scalars())
        assert heads == {"app_0002"}
        # app_0002 applied simsql_0001 (op.upgrade_simsql), recorded where `simsql db` looks.
        assert simsql.alembic.current(connection) == ("simsql_0002",)
        assert connection.execute(text("SELECT to_regclass('simsql_registry')")).scalar()

    result = simsql.backfill(engine, "articles", batch_size=64, workers=0)
    assert result.rows_read == 400
    assert result.rows_empty == 8
    assert result.rows_fingerprinted == 392
    _check_attached(engine, bodies)
    again = simsql.backfill(engine, "articles", batch_size=64, workers=0)
    assert again.rows_fingerprinted == 0  # idempotent: nothing left to do

    with Session(engine) as session:
        article = session.get(LegacyArticle, 19)
        assert article is not None
        best = session.execute(simsql.most_similar(select(LegacyArticle), article, limit=1)).one()
        assert best[0].id == 20 and best.distance <= 3
        groups = simsql.duplicate_groups(session, LegacyArticle)
        assert [19, 20] in groups
        # The ORM keeps fingerprints current; raw SQL edits can't leave a stale one behind.
        article.body = "a new text about cooking pasta with garlic and olive oil"
        session.commit()
        session.execute(text("UPDATE articles SET body = 'raw sql edit without fingerprint' WHERE id = 21"))
        session.commit()
        stale = session.execute(text("SELECT simhash, simhash_b0 FROM articles WHERE id = 21")).one()
        assert stale == (None, None)
    simsql.backfill(engine, "articles", workers=0)
    with engine.connect() as connection:
        fixed = connection.execute(text("SELECT simhash FROM articles WHERE id = 21")).scalar()
    assert simsql.bits.to_unsigned(fixed) == simsql.text.fingerprint.simhash("title 21\nraw sql edit without fingerprint")

    with engine.connect() as connection:
        command.downgrade(app_config(connection, schema), "app_0001")
        connection.commit()
        assert simsql.alembic.current(connection) == ()
    after = snapshot(engine)
    # Row 19 was edited above through the ORM; everything else must be exactly as before.
    assert after["columns"] == before["columns"]
    assert after["indexes"] == before["indexes"]
    assert after["constraints"] == before["constraints"]
    assert after["triggers"] == before["triggers"]
    with engine.connect() as connection:
        assert not connection.execute(text("SELECT to_regclass('simsql_registry')")).scalar()
        # op.downgrade_simsql() leaves no simsql table behind, its version table included
        assert not connection.execute(text("SELECT to_regclass('simsql_alembic_version')")).scalar()


def test_standalone_without_application_history(engine: Engine, schema: str) -> None:
    build_legacy(engine, rows=120)
    before = snapshot(engine)
    simsql.alembic.upgrade(engine)
    assert simsql.alembic.current(engine) == ("simsql_0002",)
    with engine.begin() as connection:
        operations.add_simhash(connection, "articles", ["title", "body"], side_table=True)
    with engine.connect() as connection:
        connection = connection.execution_options(isolation_level="AUTOCOMMIT")
        operations.create_simhash_indexes(connection, "articles", concurrently=True)
    result = simsql.backfill(engine, "articles", workers=0, batch_size=50)
    assert result.rows_read == 120
    with engine.connect() as connection:
        count = connection.execute(text("SELECT count(*) FROM articles_simhash WHERE simhash IS NOT NULL")).scalar()
        assert count == 120 - 120 // 50
        # A raw edit deletes the stale side row; backfill recreates it.
        connection.execute(text("UPDATE articles SET body = 'changed text here' WHERE id = 3"))
        connection.commit()
        assert connection.execute(text("SELECT count(*) FROM articles_simhash WHERE id = 3")).scalar() == 0
    simsql.backfill(engine, "articles", workers=0)
    with engine.begin() as connection:
        fp = connection.execute(text("SELECT simhash FROM articles_simhash WHERE id = 3")).scalar()
        assert simsql.bits.to_unsigned(fp) == simsql.text.fingerprint.simhash("title 3\nchanged text here")
        operations.drop_simhash_indexes(connection, "articles")
        operations.drop_simhash(connection, "articles")
    simsql.alembic.downgrade(engine)
    assert simsql.alembic.current(engine) == ()
    after = snapshot(engine)
    assert {k: v for k, v in after.items() if k != "checksum"} == {k: v for k, v in before.items() if k != "checksum"}
    assert after["checksum"] != before["checksum"]  # row 3 was edited on purpose


def test_bad_identifiers_change_nothing(engine: Engine) -> None:
    build_legacy(engine, rows=5)
    simsql.alembic.upgrade(engine)
    before = snapshot(engine)
    with engine.begin() as connection:
        with pytest.raises(SchemaError, match="does not exist"):
            operations.add_simhash(connection, "articles; DROP TABLE comments", ["body"])
        with pytest.raises(SchemaError, match="no column"):
            operations.add_simhash(connection, "articles", ["body", 'title" text); DROP TABLE comments; --'])
        with pytest.raises(SchemaError, match="not text"):
            operations.add_simhash(connection, "articles", ["created_at"])
    assert snapshot(engine) == before


def test_registry_refuses_a_different_config(engine: Engine) -> None:
    build_legacy(engine, rows=30)
    simsql.alembic.upgrade(engine)
    with engine.begin() as connection:
        operations.add_simhash(connection, "articles", ["title", "body"])
    simsql.backfill(engine, "articles", workers=0)
    other = simsql.Fingerprinter(shingle_size=2)
    with pytest.raises(ConfigMismatch, match=r"sh\d-"):
        simsql.backfill(engine, "articles", fingerprinter=other, workers=0)
    with engine.begin() as connection:
        with pytest.raises(ConfigMismatch):
            registry.record(connection, "articles", None, other, ("title", "body"), "columns")


def test_queries_with_another_config_are_refused(engine: Engine) -> None:
    build_legacy(engine, rows=30)
    simsql.alembic.upgrade(engine)
    with engine.begin() as connection:
        operations.add_simhash(connection, "articles", ["title", "body"], fingerprinter=simsql.Fingerprinter(shingle_size=2))
    simsql.backfill(engine, "articles", workers=0, fingerprinter=simsql.Fingerprinter(shingle_size=2))
    with Session(engine) as session:
        # LegacyArticle uses the default configuration: reading or writing must be refused.
        with pytest.raises(ConfigMismatch, match=r"sh\d-"):
            session.execute(simsql.most_similar(select(LegacyArticle), "some text")).all()
        with pytest.raises(ConfigMismatch):
            simsql.near_duplicates(session, LegacyArticle)
        session.rollback()
        session.add(LegacyArticle(title="t", body="new words here"))
        with pytest.raises(ConfigMismatch):
            session.commit()
