"""The README's Alembic path, verbatim, in a fresh ``alembic init`` project against a real
database: the ``alembic`` and ``simsql`` commands run as separate processes (forked by tests/command_line.shell), the revision gets the
README's code pasted in, the README's Python runs in a fresh interpreter. The only thing put in
is the database URL, where the README puts the user's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, make_url, text

import simsql.alembic
from tests.command_line import shell
from tests.readme import PLACEHOLDER_URL, blocks, commands
from tests.test_migrations import build_legacy, snapshot

BIN = Path(sys.executable).parent


@pytest.fixture
def url(database_url: str, schema: str) -> str:
    return make_url(database_url).update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(
        hide_password=False
    )


def run(command: str, cwd: Path, url: str) -> subprocess.CompletedProcess[str]:
    """A README command as typed, with the test's database in place of the user's."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    for name in ("SIMSQL_DATABASE_URL", "DATABASE_URL"):
        env.pop(name, None)
    result = shell(command.replace(PLACEHOLDER_URL, url), cwd, env)
    assert result.returncode == 0, f"{command}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    return result


@pytest.fixture
def project(tmp_path: Path, url: str, engine: Engine) -> Path:
    """`alembic init alembic` and the URL in alembic.ini, as the README says; the application's
    existing table with its rows."""
    build_legacy(engine, rows=60)
    run("alembic init alembic", tmp_path, url)
    ini = tmp_path / "alembic.ini"
    lines = ini.read_text().splitlines()
    lines = [f"sqlalchemy.url = {url.replace('%', '%%')}" if line.startswith("sqlalchemy.url") else line for line in lines]
    ini.write_text("\n".join(lines) + "\n")
    return tmp_path


def _write_revision(project: Path, url: str) -> Path:
    """``alembic revision`` (the README's first command), then the README's code pasted in."""
    shipped = set(Path(simsql.alembic.versions_path()).iterdir())
    (create,) = blocks("sh alembic")[:1]
    for command in commands(create):
        run(command, project, url)
    assert set(Path(simsql.alembic.versions_path()).iterdir()) == shipped  # nothing written into simsql
    (revision,) = (project / "alembic" / "versions").glob("*fingerprint_articles.py")
    generated = revision.read_text()
    (code,) = blocks("python alembic-revision")
    revision.write_text(generated[: generated.index("def upgrade")] + code)
    return revision


def _columns(engine: Engine) -> set[str]:
    with engine.connect() as connection:
        return set(
            connection.execute(
                text("SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'articles'")
            ).scalars()
        )


def _relation_exists(engine: Engine, name: str) -> bool:
    with engine.connect() as connection:
        return bool(connection.execute(text("SELECT to_regclass(:n) IS NOT NULL"), {"n": name}).scalar_one())


def test_readme_alembic_path(project: Path, url: str, engine: Engine) -> None:
    before = snapshot(engine)
    _write_revision(project, url)
    review, undo = blocks("sh alembic")[1], blocks("sh alembic")[2]

    offline, upgrade, current = (run(command, project, url) for command in commands(review))
    assert "ALTER TABLE" in offline.stdout and "ADD COLUMN" in offline.stdout
    assert "CREATE INDEX CONCURRENTLY" in offline.stdout
    assert "CREATE TABLE simsql_registry" in offline.stdout
    assert {"simhash", "simhash_b0", "simhash_b3"} <= _columns(engine)
    assert current.stdout.split() == ["simsql_0002"]
    assert run(f"simsql db upgrade --url '{url}'", project, url).stdout.split() == ["simsql_0002"]  # a no-op

    (after,) = blocks("python alembic-after")
    queried = run(f"{sys.executable} -c {_shell_quote(after)}", project, url)
    assert len(queried.stdout.splitlines()) == 3
    with engine.connect() as connection:
        missing = connection.execute(text("SELECT count(*) FROM articles WHERE body IS NOT NULL AND simhash IS NULL"))
        assert missing.scalar_one() == 0

    for command in commands(undo):
        run(command, project, url)
    assert snapshot(engine) == before
    assert not _relation_exists(engine, "simsql_registry")
    assert simsql.alembic.current(engine) == ()  # and simsql's record says so


def test_simsql_db_upgrade_first_then_the_applications_history(project: Path, url: str, engine: Engine) -> None:
    run(f"simsql db upgrade --url '{url}'", project, url)
    _write_revision(project, url)
    run("alembic upgrade head", project, url)
    assert {"simhash", "simhash_b0"} <= _columns(engine)
    assert run(f"simsql db current --url '{url}'", project, url).stdout.split() == ["simsql_0002"]
    run("alembic downgrade -1", project, url)
    assert "simhash" not in _columns(engine)


def test_another_attached_table_keeps_simsqls_objects(project: Path, url: str, engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE notes (id int PRIMARY KEY, body text)"))
    _write_revision(project, url)
    run("alembic upgrade head", project, url)
    run(f"simsql attach --table notes --text-column body --no-backfill --url '{url}'", project, url)
    run("alembic downgrade -1", project, url)
    assert "simhash" not in _columns(engine)
    assert _relation_exists(engine, "simsql_registry")  # notes still uses it


def _shell_quote(code: str) -> str:
    import shlex

    return shlex.quote(code)


@pytest.fixture
def fresh_database(admin_engine: Engine) -> Iterator[str]:
    """A database of its own: offline SQL names the schema ``public``, not a test schema."""
    name = f"simsql_offline_{uuid.uuid4().hex[:10]}"
    with admin_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(admin_engine.url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))


def _psql(url: str, sql: str, cwd: Path) -> None:
    from simsql import embedded

    script = cwd / "offline.sql"
    script.write_text(sql)
    libpq_url = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    result = subprocess.run(
        [str(embedded._wheel_install() / "bin" / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(script), libpq_url],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_offline_sql_runs_as_written(tmp_path: Path, fresh_database: str) -> None:
    # Reviewed, then applied by hand (psql) instead of by Alembic: the script must work as printed.
    engine = create_engine(fresh_database)
    try:
        build_legacy(engine, rows=30)
        before = snapshot(engine)
        run("alembic init alembic", tmp_path, fresh_database)
        ini = tmp_path / "alembic.ini"
        ini.write_text(re.sub(r"(?m)^sqlalchemy\.url = .*$", lambda _: f"sqlalchemy.url = {fresh_database.replace('%', '%%')}", ini.read_text()))
        _write_revision(tmp_path, fresh_database)
        _psql(fresh_database, run("alembic upgrade head --sql", tmp_path, fresh_database).stdout, tmp_path)
        assert {"simhash", "simhash_b0"} <= _columns(engine)
        assert simsql.alembic.current(engine) == ("simsql_0002",)
        with engine.connect() as connection:
            valid = connection.execute(
                text("SELECT count(*) FROM pg_index WHERE indrelid = 'articles'::regclass AND indisvalid")
            ).scalar_one()
        # the four 16-bit block indexes (version 2, add_simhash's default), the primary key and
        # articles_created_at
        assert valid == 4 + 2
        _psql(fresh_database, run("alembic downgrade head:base --sql", tmp_path, fresh_database).stdout, tmp_path)
        assert snapshot(engine) == before
        assert not _relation_exists(engine, "simsql_registry")
        assert not _relation_exists(engine, "simsql_alembic_version")  # the script leaves nothing either
    finally:
        engine.dispose()


def test_readme_autogenerate_path(tmp_path: Path, url: str, engine: Engine) -> None:
    """The README's models, ``target_metadata`` in env.py as it says (no ``import simsql.alembic``
    there), ``alembic revision --autogenerate``, upgrade: the trigger is in the database."""
    run("alembic init alembic", tmp_path, url)
    ini = tmp_path / "alembic.ini"
    ini.write_text(re.sub(r"(?m)^sqlalchemy\.url = .*$", lambda _: f"sqlalchemy.url = {url.replace('%', '%%')}", ini.read_text()))
    (models,) = blocks("python alembic-models")
    (tmp_path / "models.py").write_text(models)
    env = tmp_path / "alembic" / "env.py"
    env.write_text(env.read_text().replace("target_metadata = None", "from models import Base\ntarget_metadata = Base.metadata"))
    (autogenerate,) = blocks("sh alembic-autogenerate")
    for command in commands(autogenerate):
        run(command, tmp_path, url)
    (revision,) = (tmp_path / "alembic" / "versions").glob("*stories.py")
    assert "op.create_simhash_trigger('stories', ['title', 'body'])" in revision.read_text()
    with engine.begin() as connection:
        connection.execute(text(
            "INSERT INTO stories (id, title, body, simhash, simhash_src) "
            "VALUES (1, 'Harvest', 'late', 42, CAST(md5('Harvest' || chr(10) || 'late') AS uuid))"
        ))  # fmt: skip
        connection.execute(text("UPDATE stories SET body = 'early'"))
        assert connection.execute(text("SELECT simhash FROM stories")).scalar_one() is None
    assert "CREATE TRIGGER" in run("alembic upgrade base:head --sql", tmp_path, url).stdout
    run("alembic downgrade -1", tmp_path, url)
    assert not _relation_exists(engine, "stories")
    with engine.connect() as connection:
        left = connection.execute(text("SELECT count(*) FROM pg_proc WHERE pronamespace = current_schema()::regnamespace"))
        assert left.scalar_one() == 0
