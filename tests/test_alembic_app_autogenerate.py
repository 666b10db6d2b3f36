"""An application's ``alembic revision --autogenerate`` with simsql applied, as a user runs it:
a fresh ``alembic init`` project, ``env.py`` as the README shows it (``target_metadata`` and
nothing else), the application's models imported, ``simsql db upgrade`` and an attached table.
simsql's own objects (its tables, the columns, indexes and side table it added to an attached
table) must never appear in the revision: on an up-to-date database it is empty, on
PostgreSQL and on MySQL/MariaDB. The ``alembic`` and ``simsql`` commands run as separate processes (forked by tests/command_line.shell).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine, inspect, text

from tests.command_line import shell

BIN = Path(sys.executable).parent

MODELS = '''
import simsql
from sqlalchemy import String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Story(simsql.SimHashMixin, Base):
    """The README's model (with lengths MySQL needs)."""

    __tablename__ = "stories"
    __simhash_source__ = ("title", "body")
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    body: Mapped[str] = mapped_column(Text)


class Note(Base):
    """A plain model: simsql is attached to its table from the command line."""

    __tablename__ = "notes"
    id: Mapped[int] = mapped_column(primary_key=True)
    body: Mapped[str] = mapped_column(Text)
'''


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    for name in ("SIMSQL_DATABASE_URL", "DATABASE_URL"):
        env.pop(name, None)
    result = shell(command, cwd, env)
    assert result.returncode == 0, f"{command}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    return result


def _alembic_url(engine: Engine, any_url: str) -> str:
    """The URL alembic.ini gets: the test's database with a driver SQLAlchemy can load."""
    if engine.dialect.name == "postgresql":
        return any_url
    return engine.url.render_as_string(hide_password=False)


def _project(tmp_path: Path, url: str, env_edit: str = "") -> Path:
    """``alembic init``, the URL in alembic.ini, the README's model plus a plain one, and
    ``target_metadata`` in env.py as the README says (``env_edit``: a user's own lines)."""
    _run("alembic init alembic", tmp_path)
    ini = tmp_path / "alembic.ini"
    ini.write_text(re.sub(r"(?m)^sqlalchemy\.url = .*$", lambda _: f"sqlalchemy.url = {url.replace('%', '%%')}", ini.read_text()))
    (tmp_path / "models.py").write_text(MODELS)
    env = tmp_path / "alembic" / "env.py"
    source = env.read_text().replace("target_metadata = None", "from models import Base\ntarget_metadata = Base.metadata")
    if env_edit:
        source = source.replace("connection=connection, target_metadata=target_metadata", "connection=connection, target_metadata=target_metadata, " + env_edit)
        assert env_edit in source
    env.write_text(source)
    return tmp_path


def _autogenerate(project: Path, message: str) -> str:
    _run(f"alembic revision --autogenerate -m {message}", project)
    (revision,) = (project / "alembic" / "versions").glob(f"*{message}.py")
    return revision.read_text()


def _operations(revision: str) -> list[str]:
    """The ``op.`` lines of a revision's upgrade and downgrade."""
    return [line.strip() for line in revision.splitlines() if line.strip().startswith("op.")]


def _simsql_applied(project: Path, cli_url: str, side_table: bool) -> None:
    """The application's schema migrated, then simsql installed and a table attached."""
    _autogenerate(project, "initial")
    _run("alembic upgrade head", project)
    _run(f"simsql db upgrade --url '{cli_url}'", project)
    side = " --side-table" if side_table else ""
    # --no-concurrently: a concurrent build waits for every older transaction on the server,
    # other tests' included; how the indexes were built changes nothing here
    _run(f"simsql attach --table notes --text-column body --no-backfill --no-concurrently{side} --url '{cli_url}'", project)


@pytest.mark.parametrize("side_table", [False, True], ids=["columns", "side_table"])
def test_autogenerate_leaves_simsqls_objects_alone(tmp_path: Path, any_engine: Engine, any_url: str, side_table: bool) -> None:
    project = _project(tmp_path, _alembic_url(any_engine, any_url))
    _simsql_applied(project, any_url, side_table)
    names = set(inspect(any_engine).get_table_names())
    assert {"simsql_registry", "simsql_backfill", "simsql_alembic_version"} <= names

    revision = _autogenerate(project, "nothing_changed")
    assert _operations(revision) == []
    _run("alembic upgrade head", project)
    _run("alembic check", project)  # Alembic's own "no new upgrade operations" agrees


def test_autogenerate_still_sees_the_applications_changes(tmp_path: Path, any_engine: Engine, any_url: str) -> None:
    """Only simsql's objects are left out: a column the application adds is still found."""
    project = _project(tmp_path, _alembic_url(any_engine, any_url))
    _simsql_applied(project, any_url, side_table=False)
    models = project / "models.py"
    models.write_text(models.read_text() + "    rank: Mapped[int | None]\n")
    assert _operations(_autogenerate(project, "note_rank")) == [
        "op.add_column('notes', sa.Column('rank', sa.Integer(), nullable=True))",
        "op.drop_column('notes', 'rank')",
    ]


def test_the_users_include_object_keeps_working(tmp_path: Path, any_engine: Engine, any_url: str) -> None:
    """A user's ``include_object`` in env.py still decides for the user's objects."""
    keep_legacy = "include_object=lambda o, name, type_, reflected, to: name != 'legacy'"
    project = _project(tmp_path, _alembic_url(any_engine, any_url), keep_legacy)
    _simsql_applied(project, any_url, side_table=False)
    with any_engine.begin() as connection:
        connection.execute(text("CREATE TABLE legacy (id int PRIMARY KEY)"))
        connection.execute(text("CREATE TABLE other_legacy (id int PRIMARY KEY)"))
    assert _operations(_autogenerate(project, "legacy"))[:1] == ["op.drop_table('other_legacy')"]


def test_a_model_that_gains_the_mixin_after_attach(tmp_path: Path, any_engine: Engine, any_url: str) -> None:
    """The README's path: attach a live table, then let its model inherit ``SimHashMixin``;
    the columns, indexes and trigger attach made are what the model declares: no change."""
    project = _project(tmp_path, _alembic_url(any_engine, any_url))
    _simsql_applied(project, any_url, side_table=False)
    models = project / "models.py"
    models.write_text(models.read_text().replace(
        'class Note(Base):', 'class Note(simsql.SimHashMixin, Base):\n    __simhash_source__ = ("body",)'
    ))  # fmt: skip
    assert _operations(_autogenerate(project, "note_mixin")) == []
