"""The Alembic operations and algorithm version 3: ``op.add_simhash`` creates version 2 by
default (as ``SimHashMixin`` declares), ``wide=True`` the wide signature; rendered calls carry
what differs from the default; offline (``--sql``, PostgreSQL) and online on every server the operations build
what ``attach_table`` builds, and their reverse undoes it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import render_python_code
from alembic.operations import ops
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, create_engine

import simsql
import simsql.alembic
from simsql.alembic import AddSimHashOp, CreateSimHashIndexesOp, CreateSimHashTriggerOp
from simsql.schema.names import Names
from simsql.store import registry
from simsql.text.fingerprint import DEFAULT, DEFAULT_WIDE

from .tables import build_docs, config_id, state
from .test_alembic_render import _body, _migrate, _offline_scripts
from .test_readme_alembic import _psql, fresh_database  # noqa: F401  (fixture)


def _migration(**options: Any) -> ops.UpgradeOps:
    return ops.UpgradeOps(ops=[
        AddSimHashOp("docs", ["title", "body"], primary_key=["id"], **options),
        CreateSimHashIndexesOp("docs", primary_key=["id"], **({"wide": True} if options.get("wide") else {})),
    ])  # fmt: skip


def test_the_default_is_version_2_and_wide_true_renders() -> None:
    assert AddSimHashOp("docs", ["body"]).configuration == DEFAULT
    assert AddSimHashOp("docs", ["body"], wide=True).configuration == DEFAULT_WIDE
    assert AddSimHashOp("docs", ["body"], fingerprinter=DEFAULT_WIDE).configuration == DEFAULT_WIDE
    assert AddSimHashOp("docs", ["body"], wide=True).reverse().reverse().configuration == DEFAULT_WIDE
    with pytest.raises(ValueError, match="part of algorithm version 3"):
        AddSimHashOp("docs", ["body"], fingerprinter=DEFAULT, wide=True).configuration
    narrow = _body(render_python_code(_migration()))
    assert "op.add_simhash('docs', ['title', 'body'], primary_key=['id'])" in narrow and "wide" not in narrow
    wide = _migration(wide=True)
    code, undo = _body(render_python_code(wide)), _body(render_python_code(wide.reverse()))
    assert "op.add_simhash('docs', ['title', 'body'], primary_key=['id'], wide=True)" in code
    assert "op.create_simhash_indexes('docs', primary_key=['id'], wide=True)" in code
    assert "op.drop_simhash('docs', source=['title', 'body'], primary_key=['id'], wide=True)" in undo
    trigger = CreateSimHashTriggerOp("wide_articles", ["title", "body"], wide=True)
    assert "wide=True" in _body(render_python_code(ops.UpgradeOps(ops=[trigger])))
    assert trigger.trigger.names.wide


@pytest.mark.parametrize("wide", [True, False], ids=["v3", "v2"])
def test_offline_scripts_build_the_wide_columns_and_undo_them(tmp_path: Path, fresh_database: str, wide: bool) -> None:
    """``alembic upgrade --sql`` of the operations, applied by psql, then a backfill: the table
    is what attach_table would make of it."""
    engine = create_engine(fresh_database)
    try:
        build_docs(engine, rows=30)
        simsql.alembic.upgrade(engine)
        before = state(engine)
        scripts = _offline_scripts(_migration(wide=True) if wide else _migration())
        _psql(fresh_database, scripts[0], tmp_path)
        names = Names("docs", wide=wide)
        assert ("simhash_w1" in scripts[0]) == wide and all(index in scripts[0] for index in names.indexes)
        assert config_id(engine, "docs") == (DEFAULT_WIDE if wide else DEFAULT).config_id
        simsql.backfill(engine, "docs", workers=0)
        report = simsql.status(engine)[0]
        assert (report.wide, report.rows_missing, report.rows_missing_wide) == (wide, 0, 0)
        _psql(fresh_database, scripts[1], tmp_path)
        assert state(engine) == before
    finally:
        engine.dispose()


def test_online_operations_attach_version_3_and_undo_it(any_engine: Engine) -> None:
    build_docs(any_engine, rows=30)
    simsql.alembic.upgrade(any_engine)
    before = state(any_engine)
    migration = _migration(wide=True)
    with any_engine.begin() as connection:
        _migrate(_body(render_python_code(migration)), MigrationContext.configure(connection))
    with any_engine.connect() as connection:
        entry = registry.read(connection, "docs")
        assert entry is not None and entry.wide and entry.config_id == DEFAULT_WIDE.config_id
        indexes = {n.lower() for n in simsql.lifecycle.catalog.index_names(connection, entry.table_schema, "docs")}
    assert {n.lower() for n in Names("docs", wide=True).indexes} <= indexes
    simsql.backfill(any_engine, "docs", workers=0)
    report = simsql.status(any_engine)[0]
    assert (report.wide, report.rows_missing, report.rows_missing_wide) == (True, 0, 0)
    with any_engine.begin() as connection:
        _migrate(_body(render_python_code(migration.reverse())), MigrationContext.configure(connection))
    assert state(any_engine) == before


def test_an_offline_script_attaches_a_vector_configuration_and_undoes_it(tmp_path: Path, fresh_database: str) -> None:
    """``alembic upgrade --sql`` of ``op.add_simhash`` with a :class:`simsql.VectorFingerprinter`
    (a configuration without a wide signature of its own), applied by psql: the registry names
    the vector configuration, the blocks are version 2's, and the reverse script leaves the table
    as it was (before, offline naming the attachment raised AttributeError)."""
    from sqlalchemy import text

    configuration = simsql.VectorFingerprinter(12, seed=21)
    engine = create_engine(fresh_database)
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE clips (id integer PRIMARY KEY, embedding double precision[])"))
        simsql.alembic.upgrade(engine)
        before = state(engine, "clips")
        migration = ops.UpgradeOps(ops=[
            AddSimHashOp("clips", ["embedding"], fingerprinter=configuration, primary_key=["id"]),
            CreateSimHashIndexesOp("clips", primary_key=["id"]),
        ])  # fmt: skip
        scripts = _offline_scripts(migration)
        _psql(fresh_database, scripts[0], tmp_path)
        assert config_id(engine, "clips") == configuration.config_id
        assert all(index in scripts[0] for index in Names("clips").indexes) and "simhash_w1" not in scripts[0]
        _psql(fresh_database, scripts[1], tmp_path)
        assert state(engine, "clips") == before
    finally:
        engine.dispose()
