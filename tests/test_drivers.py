"""Every synchronous driver simsql supports runs the whole flow, each on a database of its own
reached by the URL a user writes: ``simsql.alembic.upgrade``, a ``SimHashMixin`` model
(``create_all``, ORM inserts, ``most_similar``, ``similar_to``, ``near_duplicates``,
``find_original``), a live table (``attach_table``, ``backfill``, ``reflect`` and a query on it),
``status`` and ``detach_table``.

PostgreSQL: psycopg 3 (the default), psycopg2, pg8000. MySQL/MariaDB: PyMySQL (the default),
mysqlclient (``mysql+mysqldb``; skipped with one line where it is not installed, since it needs
the client library's headers to build). An asyncio driver given to the synchronous API, or a
driver that is not installed, is refused before anything is tried, with the drivers and the
``pip install`` that would work (docs/drivers.md).
"""

from __future__ import annotations

import importlib.util
import re
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, String, Text, select, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
import simsql.alembic
import simsql.bits
import simsql.text.fingerprint
from simsql.errors import MissingDependency, UnsupportedDatabase
from simsql.schema.urls import SYNC_DRIVERS, check_driver, engine_for

from .command_line import cli, failed


class Base(DeclarativeBase):
    pass


class Page(simsql.SimHashMixin, Base):
    __tablename__ = "driver_pages"
    __simhash_source__ = ("body",)

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(100))
    body: Mapped[str | None] = mapped_column(Text)


WORDS = "river stone cloud maple lantern harbour violet engine copper meadow falcon silver orchard".split()


def _text(seed: int, words: int = 80) -> str:
    return " ".join(f"{WORDS[(seed * 7 + i * i) % len(WORDS)]}{(seed * 31 + i * 17) % 400}" for i in range(words))


ORIGINAL, OTHER = _text(1), _text(2)
COPY = ORIGINAL.replace(ORIGINAL.split()[1], "changed", 1)  # 1 bit from ORIGINAL


def _driver_available(drivername: str) -> str | None:
    """None when ``drivername``'s Python package is installed, else the skip reason."""
    module = {"mysqldb": "MySQLdb", "pymysql": "pymysql", "psycopg": "psycopg", "psycopg2": "psycopg2", "pg8000": "pg8000"}
    name = module[drivername.split("+")[1]]
    if importlib.util.find_spec(name) is None:
        return f"{drivername}: the {name} module is not installed"
    return None


@pytest.fixture
def pg_database(admin_engine: Engine) -> Iterator[URL]:
    """A PostgreSQL database of this test's own (the drivers differ in how they would take a
    search_path, so each test gets a database, not a schema), dropped afterwards."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    autocommit = admin_engine.execution_options(isolation_level="AUTOCOMMIT")
    with autocommit.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    yield admin_engine.url.set(database=name)
    with autocommit.connect() as connection:
        connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))


PG_DRIVERS = ["postgresql+psycopg", "postgresql+psycopg2", "postgresql+pg8000"]
MYSQL_DRIVERS = ["mysql+pymysql", "mysql+mysqldb"]


@pytest.fixture(params=PG_DRIVERS + MYSQL_DRIVERS)
def driver_url(request: pytest.FixtureRequest) -> str:
    """The test's database as a user writes its URL, with the driver named."""
    why = _driver_available(request.param)
    if why is not None:
        pytest.skip(why)
    if request.param.startswith("mysql"):
        url = request.getfixturevalue("mysql_engine").url
    else:
        url = request.getfixturevalue("pg_database")
    url = url.set(drivername=request.param)
    if request.param == "postgresql+pg8000" and "host" in url.query:
        url = _pg8000_socket(url)
    return str(url.render_as_string(hide_password=False))


def _pg8000_socket(url: URL) -> URL:
    """A server reached through its Unix socket (the embedded PostgreSQL's URL names the socket
    directory as libpq's ``host``): pg8000 takes the socket file itself, as ``unix_sock``
    (docs/drivers.md)."""
    port = url.query.get("port", "5432")
    socket = f"{url.query['host']}/.s.PGSQL.{port}"
    return url.difference_update_query(["host", "port"]).update_query_dict({"unix_sock": socket})


def _mixin_flow(engine: Engine) -> None:
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        session.add_all([Page(id=1, title="a", body=ORIGINAL), Page(id=2, title="b", body=COPY), Page(id=3, title="c", body=OTHER), Page(id=4, title="d", body=None)])
        session.commit()
        assert session.get(Page, 1).simhash == simsql.text.fingerprint.simhash(ORIGINAL)  # type: ignore[union-attr]
        rows = session.execute(simsql.most_similar(select(Page), ORIGINAL, limit=3)).all()
        assert [(page.id, distance) for page, distance, _ in rows] == [
            (1, 0),
            (2, simsql.bits.hamming(simsql.text.fingerprint.simhash(ORIGINAL), simsql.text.fingerprint.simhash(COPY))),
            (3, simsql.bits.hamming(simsql.text.fingerprint.simhash(ORIGINAL), simsql.text.fingerprint.simhash(OTHER))),
        ]
        distance = rows[1][1]
        assert distance <= 3  # the texts are built so; near_duplicates below relies on it
        near = session.scalars(select(Page.id).where(simsql.similar_to(Page, ORIGINAL, max_distance=3)).order_by(Page.id)).all()
        assert near == [1, 2]
        assert [(p.a, p.b, p.distance) for p in simsql.near_duplicates(session, Page)] == [(1, 2, distance)]
        assert simsql.duplicate_groups(session, Page) == [[1, 2]]
        match = simsql.find_original(session, Page, ORIGINAL.replace(ORIGINAL.split()[30], "other", 1))
        assert match is not None and match.row.id == 1


def _live_table_flow(url: str, engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT)"))
        connection.execute(text("INSERT INTO docs (id, body) VALUES (1, :a), (2, :b), (3, NULL)"), {"a": ORIGINAL, "b": OTHER})
    simsql.attach_table(url, "docs", ["body"], concurrently=False)
    assert simsql.backfill(url, "docs", workers=0).rows_fingerprinted == 2
    with Session(engine) as session:
        docs = simsql.reflect(session.connection(), "docs")
        found = session.execute(simsql.most_similar(select(docs), COPY, limit=1)).one()
        assert (found[0].id, found[1]) == (1, simsql.bits.hamming(simsql.text.fingerprint.simhash(COPY), simsql.text.fingerprint.simhash(ORIGINAL)))


def test_the_whole_flow(driver_url: str) -> None:
    simsql.alembic.upgrade(driver_url)
    engine = engine_for(driver_url)
    assert engine.url.drivername == driver_url.split(":")[0]  # the user's driver, kept
    try:
        _mixin_flow(engine)
        _live_table_flow(driver_url, engine)
        by_table = {entry.table: entry for entry in simsql.status(driver_url)}
        assert set(by_table) == {"docs", "driver_pages"}
        assert (by_table["docs"].rows, by_table["docs"].rows_fingerprinted, by_table["docs"].rows_missing) == (3, 2, 0)
        assert (by_table["driver_pages"].rows, by_table["driver_pages"].rows_fingerprinted) == (4, 3)
        simsql.detach_table(driver_url, "docs")
        assert {entry.table for entry in simsql.status(driver_url)} == {"driver_pages"}
    finally:
        engine.dispose()


def test_the_drivers_named_are_the_tested_ones() -> None:
    assert SYNC_DRIVERS == {"postgresql": ("psycopg", "psycopg2", "pg8000"), "mysql": ("pymysql", "mysqldb"), "mariadb": ("pymysql", "mysqldb")}
    assert sorted(f"{family}+{driver}" for family, drivers in SYNC_DRIVERS.items() if family != "mariadb" for driver in drivers) == sorted(PG_DRIVERS + MYSQL_DRIVERS)


@pytest.mark.parametrize(
    "url",
    ["postgresql+asyncpg://app@db/app", "postgresql+psycopg_async://app@db/app", "mysql+aiomysql://root@db/test", "mysql+asyncmy://root@db/test"],
)
def test_an_asyncio_driver_is_refused_by_the_sync_api(url: str) -> None:
    """Nothing is connected (there is no server at ``db``): the refusal comes first."""
    family = "PostgreSQL" if url.startswith("postgresql") else "MySQL/MariaDB"
    with pytest.raises(UnsupportedDatabase, match=rf"{re.escape(make_url(url).drivername)} is an asyncio driver.*{family}.*\+") as refused:
        simsql.status(url)
    assert "+psycopg" in str(refused.value) or "+pymysql" in str(refused.value)
    with pytest.raises(UnsupportedDatabase, match="asyncio driver"):
        check_driver(url)


def test_a_missing_driver_names_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    """A driver whose package is absent: MissingDependency (an ImportError) with the pip command,
    not SQLAlchemy's bare ModuleNotFoundError."""
    import sys

    monkeypatch.setitem(sys.modules, "pg8000", None)  # what `import pg8000` sees when it is not installed
    with pytest.raises(MissingDependency, match=r"postgresql\+pg8000 needs the pg8000 package: pip install pg8000"):
        simsql.status("postgresql+pg8000://app@db/app")
    monkeypatch.setitem(sys.modules, "pymysql", None)
    with pytest.raises(MissingDependency, match=r"pip install PyMySQL.*mysql\+mysqldb"):
        simsql.backfill("mysql://root@db/test", "docs")
    assert issubclass(MissingDependency, ImportError)


def test_the_command_line_refuses_an_asyncio_driver() -> None:
    failed(cli("status", url="postgresql+asyncpg://app@db/app"), 1, "postgresql+asyncpg is an asyncio driver")
