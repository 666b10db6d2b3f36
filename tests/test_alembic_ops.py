"""simsql's Alembic operations in an application's own migration history, online, and
autogenerate: a migration generated from the models builds what ``create_all`` builds, and
undoing it leaves the database as it was. On MySQL/MariaDB here; PostgreSQL's walk through the
same operations is tests/test_migrations.py, its renderers tests/test_alembic_render.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, text

import simsql
import simsql.alembic
import simsql.errors
from simsql.lifecycle import catalog
from simsql.schema.names import Names

from .tables import build_live_docs, fingerprint_by_hand, groups, state

_REVISION = '''"""fingerprint docs

Revision ID: app_0001
"""

from alembic import op

import simsql.alembic  # noqa: F401

revision = "app_0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.upgrade_simsql()
    op.add_simhash("docs", source=["title", "body"]{options})
    op.create_simhash_indexes("docs", concurrently=True{options})


def downgrade() -> None:
    op.drop_simhash_indexes("docs", concurrently=True{options})
    op.drop_simhash("docs")
    op.downgrade_simsql()
'''


def _application(tmp_path: Any, options: str) -> Any:
    import shutil
    from pathlib import Path

    from alembic.config import Config

    legacy = Path(__file__).parent / "legacy_app"
    (tmp_path / "versions").mkdir()
    shutil.copy(legacy / "env.py", tmp_path / "env.py")
    shutil.copy(legacy / "script.py.mako", tmp_path / "script.py.mako")
    (tmp_path / "versions" / "app_0001.py").write_text(_REVISION.replace("{options}", options))
    config = Config()
    config.set_main_option("script_location", str(tmp_path))
    config.set_main_option("version_locations", str(tmp_path / "versions"))
    config.set_main_option("path_separator", "os")
    return config


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_alembic_operations_in_a_mysql_applications_history(mysql_engine: Engine, tmp_path: Any, side_table: bool) -> None:
    from alembic import command

    build_live_docs(mysql_engine)
    before = state(mysql_engine)
    config = _application(tmp_path, ", side_table=True" if side_table else "")
    with mysql_engine.connect() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "heads")
        connection.commit()
        assert simsql.alembic.current(connection) == ("simsql_0002",)
        assert connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == ["app_0001"]
    entry = simsql.status(mysql_engine)[0]  # version 2, add_simhash's default (as SimHashMixin's)
    assert (entry.mode, entry.rows_missing) == ("side_table" if side_table else "columns", 4)
    holder = "docs_simhash" if side_table else "docs"
    with mysql_engine.connect() as connection:
        indexes = catalog.index_names(connection, connection.execute(text("SELECT DATABASE()")).scalar_one(), holder)
    assert sorted(i for i in indexes if i.startswith("ix_")) == sorted(Names(holder).indexes)
    fingerprint_by_hand(mysql_engine, holder if side_table else None)
    assert groups(mysql_engine) == [[1, 2]]

    with mysql_engine.connect() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "base")
        connection.commit()
    after = state(mysql_engine)
    assert (after["create"], after["checksum"], after["triggers"]) == (before["create"], before["checksum"], before["triggers"])
    assert after["registry"] is None  # op.downgrade_simsql() removed simsql's tables too


def test_offline_scripts_are_refused_on_mysql(mysql_engine: Engine, tmp_path: Any) -> None:
    from alembic import command

    config = _application(tmp_path, "")
    config.set_main_option("sqlalchemy.url", mysql_engine.url.render_as_string(hide_password=False))
    with pytest.raises(simsql.text.errors.UnsupportedDatabase, match="offline .* online"):
        command.upgrade(config, "heads", sql=True)


def _autogenerate(connection: Any, downgrade: bool = False) -> str:
    """The operations Alembic's autogenerate writes for tests/models.py, as migration code."""
    import textwrap

    from alembic.autogenerate import produce_migrations, render_python_code
    from alembic.runtime.migration import MigrationContext

    from .models import Base

    context = MigrationContext.configure(connection)
    script = produce_migrations(context, Base.metadata)
    operations = script.downgrade_ops if downgrade else script.upgrade_ops
    assert operations is not None
    rendered = render_python_code(operations, migration_context=context)
    return textwrap.dedent("\n".join(line for line in rendered.splitlines() if not line.startswith("#")))


def _migrate(connection: Any, code: str) -> None:
    """Run migration code as Alembic runs a revision's body, online."""
    import sqlalchemy
    from alembic.operations import Operations
    from alembic.runtime.migration import MigrationContext
    from sqlalchemy.dialects import mysql

    with Operations.context(MigrationContext.configure(connection)):
        from alembic import op

        exec(compile(code, "<migration>", "exec"), {"sa": sqlalchemy, "op": op, "mysql": mysql})  # noqa: S102


def _definitions(engine: Engine) -> dict[str, list[str]]:
    """The definitions of the models' tables and every trigger, as the server shows them."""
    with engine.connect() as connection:
        return {
            table: sorted(line.rstrip(",") for line in connection.execute(text(f"SHOW CREATE TABLE {table}")).one()[1].splitlines())
            for table in ("articles", "posts_simhash")
        } | {"triggers": sorted(connection.execute(text(
            "SELECT CONCAT(TRIGGER_NAME, ' ', ACTION_STATEMENT) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()"
        )).scalars())}


def test_autogenerate_on_mysql_builds_what_create_all_builds(mysql_engine: Engine, mysql_admin_engine: Engine) -> None:
    """A migration autogenerated from SimHashMixin / simsql.attach_model models against MySQL creates
    the tables create_all creates there: unsigned fingerprint, VIRTUAL blocks, covering indexes,
    the triggers; autogenerating again finds nothing of simsql's to do."""
    import sqlalchemy

    from .models import Base

    with mysql_engine.begin() as connection:
        code = _autogenerate(connection)
        downgrade = _autogenerate(connection, downgrade=True)
        assert "mysql.BIGINT(unsigned=True)" in code and "persisted=False" in code
        assert "op.drop_simhash_trigger('articles', ['title', 'body'])" in downgrade
        _migrate(connection, code)
    with mysql_engine.connect() as connection:
        again = _autogenerate(connection)
    assert "simhash" not in again, again
    other = mysql_engine.url.set(database=f"{mysql_engine.url.database}_b")
    with mysql_admin_engine.begin() as connection:
        connection.execute(text(f"CREATE DATABASE `{other.database}`"))
    try:
        created = sqlalchemy.create_engine(other)
        Base.metadata.create_all(created)
        assert _definitions(mysql_engine) == _definitions(created)
        created.dispose()
        with mysql_engine.begin() as connection:
            _migrate(connection, downgrade)
        assert _state_tables(mysql_engine) == ([], [])  # tables and triggers gone
    finally:
        with mysql_admin_engine.begin() as connection:
            connection.execute(text(f"DROP DATABASE `{other.database}`"))


def _state_tables(engine: Engine) -> tuple[list[str], list[str]]:
    with engine.connect() as connection:
        tables = sorted(connection.execute(text("SHOW TABLES")).scalars())
        triggers = sorted(connection.execute(text("SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()")).scalars())
    return tables, triggers


