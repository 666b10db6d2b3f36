"""What only MySQL/MariaDB can get wrong: plans that read the block indexes, not every row.

The answers themselves are checked against brute force by tests/test_queries.py, which runs
every query test on PostgreSQL and on MySQL/MariaDB; here the plans are checked, because a
MariaDB plan that is correct but correlated per row is a full scan in disguise.
"""

from __future__ import annotations

import random

from sqlalchemy import Connection, Engine, insert, select, text
from sqlalchemy.orm import Session

import simsql

from .models import Article, Base


def _explain(engine: Engine, statement: object) -> list[dict[str, object]]:
    sql = str(statement.compile(engine, compile_kwargs={"literal_binds": True}))  # type: ignore[attr-defined]
    with engine.connect() as connection:
        return [dict(row._mapping) for row in connection.execute(text(explain(connection) + sql))]


def explain(connection: Connection) -> str:
    """EXPLAIN as a table of rows: MySQL 9's default format can be TREE (``explain_format``);
    MariaDB knows no FORMAT=TRADITIONAL, and its plain EXPLAIN is the table."""
    return "EXPLAIN " if getattr(connection.dialect, "is_mariadb", False) else "EXPLAIN FORMAT=TRADITIONAL "


def _loaded(engine: Engine, size: int = 3000) -> int:
    Base.metadata.create_all(engine)
    rng = random.Random(7)
    rows = [{"id": i + 1, "title": "t", "body": None, "category": "x", "simhash": rng.getrandbits(64)} for i in range(size)]
    with engine.begin() as connection:
        connection.execute(insert(Article.__table__), rows)
        connection.execute(text("ANALYZE TABLE articles"))
    return rng.getrandbits(64)


def test_similar_to_is_not_a_correlated_subquery(mysql_engine: Engine) -> None:
    query = _loaded(mysql_engine)
    plan = _explain(mysql_engine, select(Article.id).where(simsql.similar_to(Article, query, 3)))
    assert not [row for row in plan if "DEPENDENT" in str(row["select_type"])], plan
    probes = [row for row in plan if str(row["key"]).startswith("ix_articles_simhash_b")]
    assert len(probes) == 4 and all(row["type"] in ("ref", "range") for row in probes), plan


def test_most_similar_bands_probe_ranges_and_stored_values_are_unsigned(mysql_engine: Engine) -> None:
    query = _loaded(mysql_engine)
    plan = _explain(mysql_engine, simsql.most_similar(select(Article), query, limit=10, probe_radius=1))
    band_reads = [row for row in plan if str(row["key"]).startswith("ix_articles_simhash_b") and row["type"] != "index"]
    assert band_reads and all(row["type"] in ("ref", "range") for row in band_reads), plan
    with Session(mysql_engine) as session:
        session.execute(text("UPDATE articles SET simhash = 18446744073709551615 WHERE id = 1"))
        stored = session.execute(text("SELECT simhash, simhash_b0 FROM articles WHERE id = 1")).one()
        assert tuple(stored) == (2**64 - 1, 0xFFFF)
        assert session.execute(select(Article.simhash).where(Article.id == 1)).scalar_one() == 2**64 - 1
