"""What simsql reads from a server's catalog about a user's table: its columns, keys and their
exact types, triggers, and every object that depends on columns simsql would drop (the facts
attach and detach decide on). MySQL/MariaDB read ``information_schema``; PostgreSQL's catalog
is read through the lifecycle tests (tests/test_lifecycle.py), which compare it before and after.
"""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text

import simsql
import simsql.errors
from simsql.lifecycle import catalog

from .tables import run


def test_catalog_facts_of_a_real_table(mysql_engine: Engine) -> None:
    run(
        mysql_engine,
        "CREATE TABLE docs (region VARCHAR(8) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, n BIGINT UNSIGNED NOT NULL, "
        "title VARCHAR(200), body MEDIUMTEXT, views INT, PRIMARY KEY (region, n))",
        "CREATE TRIGGER docs_audit BEFORE INSERT ON docs FOR EACH ROW SET NEW.views = 0",
        "CREATE VIEW doc_titles AS SELECT title FROM docs",
    )
    with mysql_engine.connect() as connection:
        schema = connection.execute(text("SELECT DATABASE()")).scalar_one()
        facts = catalog.table_facts(connection, "docs", schema)
        assert facts is not None
        assert (facts.schema, facts.name, facts.kind) == (schema, "docs", "r")
        assert list(facts.columns) == ["region", "n", "title", "body", "views"]
        assert {name for name, column in facts.columns.items() if column.is_text} == {"region", "title", "body"}
        assert facts.keys == ("region", "n")
        # key types are spelled so a side table's key can reference them (charset and collation included)
        # (MySQL >= 8.0.19 no longer shows integer display widths; MariaDB does)
        widths = bool(connection.dialect.is_mariadb) or tuple(connection.dialect.server_version_info[:3]) < (8, 0, 19)
        assert facts.key_types == ("varchar(8) CHARACTER SET ascii COLLATE ascii_bin", "bigint(20) unsigned" if widths else "bigint unsigned")
        assert facts.triggers == ("docs_audit",)
        assert catalog.table_facts(connection, "doc_titles", schema) is None  # a view is not a table
        assert catalog.table_facts(connection, "Docs", schema) is None  # names are exact
        assert catalog.table_facts(connection, "missing", schema) is None
        target = catalog.describe(connection, "docs", ["title", "body"])
        assert (target.schema, target.keys, target.source) == (schema, ("region", "n"), ("title", "body"))
        with pytest.raises(simsql.text.errors.SchemaError, match=r"docs\.views is int\(11\), not text" if widths else r"docs\.views is int, not text"):
            catalog.describe(connection, "docs", ["views"])
        with pytest.raises(simsql.text.errors.SchemaError, match="does not exist"):
            catalog.describe(connection, "missing", ["body"])


def test_catalog_names_what_depends_on_columns(mysql_engine: Engine) -> None:
    run(
        mysql_engine,
        "CREATE TABLE docs (id INT PRIMARY KEY, body TEXT, fp BIGINT UNSIGNED, fp_b0 INT AS ((fp >> 48) & 65535) VIRTUAL, "
        "fp_twice BIGINT UNSIGNED AS (fp * 2) VIRTUAL, CONSTRAINT ck_fp CHECK (fp <> 1), CONSTRAINT ck_id CHECK (id > 0))",
        # another table's check on a column of the same name is not one of docs'
        "CREATE TABLE others (fp BIGINT UNSIGNED, CONSTRAINT ck_others CHECK (fp <> 2))",
        "CREATE INDEX ix_mine ON docs (id, fp)",
        "CREATE INDEX ix_simsql ON docs (fp_b0, fp)",
        "CREATE VIEW fps AS SELECT id, fp FROM docs",
        "CREATE VIEW bodies AS SELECT id, body FROM docs",
    )
    with mysql_engine.connect() as connection:
        schema = connection.execute(text("SELECT DATABASE()")).scalar_one()
        found = catalog.dependents(connection, schema, "docs", ["fp", "fp_b0"], own=["ix_simsql"])
    assert found == [
        "check constraint ck_fp on table docs", "generated column docs.fp_twice", "index ix_mine on table docs", f"view {schema}.fps",
    ]


