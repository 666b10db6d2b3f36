"""pgvector's HNSW index made by an application's migrations (issue 44).

Alembic: ``op.add_vector_index`` in a revision of the application's own history, run by
``alembic upgrade`` (in the migration's transaction, or ``CONCURRENTLY`` with
``concurrently=True``), undone by its ``downgrade`` (``op.drop_vector_index``); refused in an
offline ``--sql`` script. Django: ``AddVectorIndex`` in an atomic and a non-atomic migration,
migrated back; ``manage.py simsql vector-index``. Every face runs
:func:`simsql.lifecycle.add_vector_index`'s plan, so the index is the one the function builds,
checked in ``pg_indexes`` and by ranking against numpy's brute force. Where pgvector is missing
(the PostgreSQL 15 service, MySQL/MariaDB) the migration stops with the function's
``UnsupportedDatabase`` and leaves the revision before it applied.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, event, inspect, select, text
from sqlalchemy.orm import Session

import simsql
import simsql.alembic
from simsql.errors import UnsupportedDatabase
from simsql.schema.names import Names
from simsql.lifecycle.vector_index import plan_vector_index
from tests.test_django import django_project, own_engine  # noqa: F401  fixtures
from tests.test_vectors_hnsw import _has_pgvector, _index_sql, _truth, _vectors
from tests.test_vectors_pgvector import SIGNER

INDEX = Names("clips").vector_index

_CLIPS = '''"""clips: a table of embeddings, attached with a vector configuration

Revision ID: app_0001
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY

import simsql
import simsql.alembic  # noqa: F401

revision = "app_0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.upgrade_simsql()
    vector = ARRAY(sa.Double()).with_variant(sa.JSON(), "mysql", "mariadb")
    op.create_table("clips", sa.Column("id", sa.Integer, primary_key=True, autoincrement=False), sa.Column("embedding", vector))
    op.add_simhash("clips", ["embedding"], fingerprinter=simsql.VectorFingerprinter(12, seed=21))


def downgrade() -> None:
    op.drop_simhash("clips")
    op.drop_table("clips")
    op.downgrade_simsql()
'''

_INDEX = '''"""clips ranked by pgvector

Revision ID: app_0002
"""

from alembic import op

import simsql.alembic  # noqa: F401

revision = "app_0002"
down_revision = "app_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_vector_index("clips", m=8, ef_construction=32{options})


def downgrade() -> None:
    op.drop_vector_index("clips"{options})
'''


def _application(tmp_path: Path, options: str) -> Any:
    """An application's Alembic environment (tests/legacy_app's env.py) with the two revisions."""
    import shutil

    from alembic.config import Config

    legacy = Path(__file__).parent / "legacy_app"
    (tmp_path / "versions").mkdir()
    shutil.copy(legacy / "env.py", tmp_path / "env.py")
    shutil.copy(legacy / "script.py.mako", tmp_path / "script.py.mako")
    (tmp_path / "versions" / "app_0001.py").write_text(_CLIPS)
    (tmp_path / "versions" / "app_0002.py").write_text(_INDEX.replace("{options}", options))
    config = Config()
    config.set_main_option("script_location", str(tmp_path))
    config.set_main_option("version_locations", str(tmp_path / "versions"))
    config.set_main_option("path_separator", "os")
    return config


@contextmanager
def statements(engine: Engine) -> Iterator[list[str]]:
    """Every statement ``engine``'s connections send while the block runs."""
    sent: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        sent.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record)


def _migrate(engine: Engine, config: Any, revision: str, *, down: bool = False) -> None:
    from alembic import command

    with engine.connect() as connection:
        config.attributes["connection"] = connection
        (command.downgrade if down else command.upgrade)(config, revision)
        connection.commit()


def _applied(engine: Engine) -> list[str]:
    with engine.connect() as connection:
        return list(connection.execute(text("SELECT version_num FROM alembic_version")).scalars())


def _load(engine: Engine, table: str, vectors: np.ndarray) -> None:
    """Rows written with SQL, as the application's other writers do: signed by the backfill."""
    with engine.begin() as connection:
        connection.execute(
            text(f"INSERT INTO {table} (id, embedding) VALUES (:id, :v)"),  # noqa: S608  the tests' own names
            [{"id": i + 1, "v": v.tolist()} for i, v in enumerate(vectors)],
        )


def _ranked_by_pgvector(engine: Engine, table: str, vectors: np.ndarray) -> list[int]:
    """The top 10 of a query through ``using="pgvector"`` (refused without simsql's index)."""
    query = _vectors(1, seed=8)[0]
    with engine.connect() as connection:
        model = simsql.reflect(connection, table)
    with Session(engine) as session:
        found = simsql.most_similar_vectors(session, select(model), query, limit=10, using="pgvector", ef_search=400)
    assert [m.row.id for m in found] == _truth(vectors, query, 10)
    return [m.row.id for m in found]


@pytest.mark.parametrize("concurrently", [False, True], ids=["in-the-transaction", "concurrently"])
def test_an_alembic_revision_builds_the_index_and_its_downgrade_drops_it(engine: Engine, tmp_path: Path, concurrently: bool) -> None:
    if not _has_pgvector(engine):
        pytest.skip("pgvector is not installed on the test server (the embedded PostgreSQL ships it)")
    config = _application(tmp_path, ", concurrently=True" if concurrently else "")
    _migrate(engine, config, "app_0001")
    vectors = _vectors(300)
    _load(engine, "clips", vectors)
    with engine.connect() as connection:  # what simsql.lifecycle.add_vector_index would run
        planned = plan_vector_index(connection, "clips", m=8, ef_construction=32, concurrently=concurrently).sql
    with statements(engine) as sent:
        _migrate(engine, config, "heads")
    assert _applied(engine) == ["app_0002"]
    assert [s for s in sent if s.startswith("CREATE INDEX")] == planned
    assert planned[0].startswith("CREATE INDEX CONCURRENTLY" if concurrently else "CREATE INDEX IF NOT EXISTS")
    definition = _index_sql(engine, INDEX)
    assert definition is not None and "USING hnsw" in definition
    assert "m='8'" in definition.replace(" ", "") and "ef_construction='32'" in definition.replace(" ", "")
    _ranked_by_pgvector(engine, "clips", vectors)
    simsql.backfill(engine, "clips", workers=0)  # the index and the signatures live side by side
    _ranked_by_pgvector(engine, "clips", vectors)

    with statements(engine) as sent:
        _migrate(engine, config, "app_0001", down=True)
    [drop] = [s for s in sent if s.startswith("DROP INDEX")]
    assert drop.startswith("DROP INDEX CONCURRENTLY" if concurrently else "DROP INDEX IF EXISTS")
    assert _index_sql(engine, INDEX) is None and _applied(engine) == ["app_0001"]
    with Session(engine) as session, pytest.raises(UnsupportedDatabase, match="no HNSW index of simsql's"):
        model = simsql.reflect(session.connection(), "clips")
        simsql.most_similar_vectors(session, select(model), vectors[0], using="pgvector")
    _migrate(engine, config, "base", down=True)
    assert "clips" not in inspect(engine).get_table_names()


def test_without_pgvector_the_revision_stops_saying_why(any_engine: Engine, tmp_path: Path) -> None:
    """The PostgreSQL 15 service and MySQL/MariaDB; skipped where pgvector is there."""
    if _has_pgvector(any_engine):
        pytest.skip("this server has pgvector: the refusal is tested on one without it")
    config = _application(tmp_path, "")
    postgresql = any_engine.dialect.name == "postgresql"
    said = "pgvector is not available on this server" if postgresql else "pgvector runs on PostgreSQL only"
    with pytest.raises(UnsupportedDatabase, match=said):
        _migrate(any_engine, config, "heads")
    with pytest.raises(UnsupportedDatabase, match=said):  # the lifecycle function says the same
        simsql.lifecycle.add_vector_index(any_engine, "clips")
    assert _applied(any_engine) == ["app_0001"]  # the revision before it stands, nothing of this one
    _migrate(any_engine, config, "base", down=True)
    assert "clips" not in inspect(any_engine).get_table_names()


def test_an_offline_script_is_refused_before_it_is_written(engine: Engine, tmp_path: Path) -> None:
    """``--sql`` cannot know pgvector's schema or the vector column's type: refused, naming the
    operation, before a line of it is written."""
    from alembic import command

    config = _application(tmp_path, "")
    config.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%"))
    script = io.StringIO()
    config.output_buffer = script
    for revisions in ("app_0001:app_0002", "app_0002:app_0001"):
        with pytest.raises(UnsupportedDatabase, match=r"op.\w+_vector_index runs online only \(alembic upgrade head, not --sql\)"):
            (command.upgrade if revisions < "app_0002" else command.downgrade)(config, revisions, sql=True)
    assert "hnsw" not in script.getvalue().lower() and "INDEX" not in script.getvalue()


# Django: the app ``blog`` given migrations of the test's own (MIGRATION_MODULES), on ``default``.

_DJANGO_CLIPS = '''
from django.contrib.postgres.fields import ArrayField
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies = []
    operations = [
        migrations.CreateModel(
            name="Clip",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("embedding", ArrayField(models.FloatField(), null=True)),
            ],
        ),
    ]
'''

_DJANGO_INDEX = '''
from django.db import migrations

from simsql.django.operations import AddVectorIndex


class Migration(migrations.Migration):
    atomic = {atomic}
    dependencies = [("blog", "0001_initial")]
    operations = [AddVectorIndex("clip", m=8, ef_construction=32)]
'''


@contextmanager
def django_clips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, atomic: bool) -> Iterator[Engine]:
    """``blog_clip`` created by migration 0001 and attached with a vector configuration (as
    ``simsql attach`` would); migrated to zero afterwards, simsql's objects removed."""
    from django.core.management import call_command
    from django.test.utils import override_settings

    package = f"blog_clips_{uuid.uuid4().hex[:8]}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "0001_initial.py").write_text(_DJANGO_CLIPS)
    (tmp_path / package / "0002_vector_index.py").write_text(_DJANGO_INDEX.replace("{atomic}", str(atomic)))
    monkeypatch.syspath_prepend(str(tmp_path))
    engine = own_engine("default")
    with override_settings(MIGRATION_MODULES={"blog": package}):
        call_command("migrate", "blog", "0001", database="default", verbosity=0)
        try:
            simsql.attach_table(engine, "blog_clip", ["embedding"], fingerprinter=SIGNER)
            yield engine
        finally:
            call_command("migrate", "blog", "0001", database="default", verbosity=0)
            simsql.detach_table(engine, "blog_clip")
            call_command("migrate", "blog", "zero", database="default", verbosity=0)
            simsql.alembic.downgrade(engine)


@pytest.mark.parametrize("atomic", [True, False], ids=["atomic", "not-atomic"])
def test_a_django_migration_builds_the_index_and_migrating_back_drops_it(
    django_project: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, atomic: bool,  # noqa: F811
) -> None:  # fmt: skip
    from django.core.management import call_command

    import simsql.django.connection

    if not _has_pgvector(own_engine("default")):
        pytest.skip("pgvector is not installed on the test server (the embedded PostgreSQL ships it)")
    index = Names("blog_clip").vector_index
    with django_clips(tmp_path, monkeypatch, atomic) as engine:
        vectors = _vectors(300)
        _load(engine, "blog_clip", vectors)
        with statements(simsql.django.connection.engine_for("default")) as sent:  # Django's own connection
            call_command("migrate", "blog", "0002", database="default", verbosity=0)
        [build] = [s for s in sent if s.startswith("CREATE INDEX")]
        assert build.startswith("CREATE INDEX IF NOT EXISTS" if atomic else "CREATE INDEX CONCURRENTLY")
        definition = _index_sql(engine, index)
        assert definition is not None and "m='8'" in definition.replace(" ", "")
        _ranked_by_pgvector(engine, "blog_clip", vectors)
        call_command("migrate", "blog", "0001", database="default", verbosity=0)
        assert _index_sql(engine, index) is None
        # manage.py simsql: the command line's own subcommand, with the same settings
        out = io.StringIO()
        call_command("simsql", "vector-index", "add", "--table", "blog_clip", "--m", "12", "--ef-construction", "48", stdout=out)
        assert "built the HNSW index of blog_clip" in out.getvalue()
        assert "ef_construction='48'" in str(_index_sql(engine, index)).replace(" ", "")
        call_command("simsql", "vector-index", "drop", "--table", "blog_clip", stdout=io.StringIO())
        assert _index_sql(engine, index) is None


def test_without_pgvector_the_django_migration_stops_saying_why(
    django_project: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:  # fmt: skip
    """The PostgreSQL 15 service; skipped where pgvector is there."""
    from django.core.management import call_command

    if _has_pgvector(own_engine("default")):
        pytest.skip("this server has pgvector: the refusal is tested on one without it")
    with django_clips(tmp_path, monkeypatch, atomic=True) as engine:
        with pytest.raises(UnsupportedDatabase, match="pgvector is not available on this server"):
            call_command("migrate", "blog", "0002", database="default", verbosity=0)
        assert _index_sql(engine, Names("blog_clip").vector_index) is None


def test_the_operations_carry_their_settings_to_their_reverse_and_into_a_migration_file() -> None:
    """Alembic's ``reverse()`` keeps ``m``, ``ef_construction`` and ``concurrently`` (a downgrade
    written from it builds the same index again); Django's ``deconstruct`` writes only what
    differs from pgvector's defaults, and the operation it describes is the same."""
    from alembic.operations import Operations

    from simsql.alembic import AddVectorIndexOp, DropVectorIndexOp

    op = AddVectorIndexOp("clips", "media", True, 24, 100)
    back = op.reverse()
    assert isinstance(back, DropVectorIndexOp)
    again = back.reverse()
    assert isinstance(again, AddVectorIndexOp)
    assert (again.table_name, again.schema, again.concurrently, again.m, again.ef_construction) == ("clips", "media", True, 24, 100)
    for operation in (AddVectorIndexOp, DropVectorIndexOp):
        assert Operations._to_impl.dispatch(operation.__new__(operation)).__module__ == "simsql.alembic.toimpl"
    pytest.importorskip("django")
    from simsql.django.operations import AddVectorIndex

    assert AddVectorIndex("Clip").deconstruct() == ("AddVectorIndex", ["Clip"], {})
    name, args, kwargs = AddVectorIndex("Clip", m=24, ef_construction=100).deconstruct()
    assert (name, args, kwargs) == ("AddVectorIndex", ["Clip"], {"m": 24, "ef_construction": 100})
    rebuilt = AddVectorIndex(*args, **kwargs)
    assert (rebuilt.model_name_lower, rebuilt.m, rebuilt.ef_construction) == ("clip", 24, 100)
