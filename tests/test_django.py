"""simsql for Django (simsql.django) on real servers, through Django's own backends.

The test project (tests/django_project) is configured once per session with both servers:
``default`` is a database of its own on the suite's PostgreSQL (``database_url``: the server of
``SIMSQL_TEST_DATABASE_URL``, else the embedded one), ``mysql`` one on its MySQL/MariaDB
(``mysql_url``; skipped with the suite's line when none answers); MySQLdb is PyMySQL. Each test
migrates the app ``news`` forward and back to zero, which leaves nothing of it or of simsql.
Every answer is checked against brute force over fingerprints computed in Python, and against
simsql's SQLAlchemy API on the same table.
"""

from __future__ import annotations

import asyncio
import io
import random
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine, inspect, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

import simsql
import simsql.alembic
import simsql.bits
import simsql.errors
from simsql.text.fingerprint import DEFAULT_WIDE
from tests.conftest import MYSQL_SKIP

ALIASES = ["default", "mysql"]
TABLE = "news_article"
TOPICS = [
    "Train drivers will strike on Monday over pay, the union said; most regional lines will run no trains at all.",
    "A wet spring delayed the wheat harvest by three weeks in the north, farmers said on Friday.",
    "The city council approved a new cycle lane along the river after a long public consultation.",
    "Researchers found that the old bridge needs urgent repairs before the winter storms arrive.",
    "The museum will open a new wing for modern art next spring, its director announced today.",
    "Heavy snow closed the mountain pass overnight and the police asked drivers to stay at home.",
]


def _database_name(url: str) -> str:
    return f"test_{make_url(url).database or 'simsql'}_django"


def _create(url: str, name: str) -> None:
    mysql = make_url(url).get_backend_name() in ("mysql", "mariadb")
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        if mysql:
            connection.execute(text(f"DROP DATABASE IF EXISTS `{name}`"))
            connection.execute(text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
        else:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()


def _drop(url: str, name: str) -> None:
    mysql = make_url(url).get_backend_name() in ("mysql", "mariadb")
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text(f"DROP DATABASE IF EXISTS `{name}`" if mysql else f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    engine.dispose()


_PROJECT: dict[str, Any] = {"users": 0, "servers": {}}
"""The one test project of the session: each module importing :func:`django_project` has a
fixture of its own, and the first creates the databases, the last drops them."""


@pytest.fixture(scope="session")
def django_project(database_url: str, request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """Django configured with the test project; yields alias -> SQLAlchemy URL of the server."""
    pytest.importorskip("django")
    if not _PROJECT["users"]:
        _PROJECT["servers"] = _configure(database_url, request)
    _PROJECT["users"] += 1
    yield dict(_PROJECT["servers"])
    _PROJECT["users"] -= 1
    if _PROJECT["users"]:
        return
    from django.db import connections

    connections.close_all()
    for engine in _ENGINES.values():
        engine.dispose()
    _ENGINES.clear()
    for url in _PROJECT["servers"].values():
        _drop(url, _database_name(url))


def _configure(database_url: str, request: pytest.FixtureRequest) -> dict[str, str]:
    import pymysql

    pymysql.install_as_MySQLdb()
    import django
    from django.conf import settings

    from tests.django_project.settings import database
    from tests.django_project.settings import settings as project_settings

    servers = {"default": database_url}
    try:
        servers["mysql"] = request.getfixturevalue("mysql_url")
    except pytest.skip.Exception:
        pass
    for url in servers.values():
        _create(url, _database_name(url))
    if not settings.configured:
        settings.configure(**project_settings({alias: database(url, _database_name(url)) for alias, url in servers.items()}))
        django.setup()
    return servers


@pytest.fixture(params=ALIASES)
def alias(request: pytest.FixtureRequest, django_project: dict[str, str]) -> str:
    if request.param not in django_project:
        pytest.skip(f"{MYSQL_SKIP}: no server answered")
    return str(request.param)


def migrate(alias: str, target: str) -> None:
    from django.core.management import call_command

    call_command("migrate", "news", target, database=alias, verbosity=0)


@pytest.fixture
def news(alias: str) -> Iterator[str]:
    """The app ``news`` migrated (its table attached to simsql); migrated to zero afterwards."""
    migrate(alias, "0002")
    yield alias
    migrate(alias, "zero")


def corpus(seed: int = 7) -> list[tuple[str, str]]:
    """(title, body) rows: each topic, and edited copies of it (a word or two changed)."""
    rng = random.Random(seed)
    rows = []
    for number, body in enumerate(TOPICS):
        rows.append((f"Topic {number}", body))
        words = body.split()
        for _ in range(4):
            edited = list(words)
            for _ in range(rng.randint(1, 3)):
                edited[rng.randrange(len(edited))] = rng.choice(["later", "quickly", "yesterday", "again", "the"])
            rows.append((f"Topic {number}", " ".join(edited)))
    return rows


def add_articles(alias: str, rows: list[tuple[str, str]]) -> list[Any]:
    from tests.django_project.news.models import Article

    articles = [Article(title=title, body=body) for title, body in rows]
    for article in articles:
        article.save(using=alias)
    return articles


def expected_words(title: str, body: str | None) -> tuple[int, ...]:
    text_value = "\n".join(part for part in (title, body) if part is not None)
    return DEFAULT_WIDE.signature(text_value).words


def brute_force(rows: list[tuple[int, int]], fingerprint: int, exclude: Any = None) -> list[tuple[int, int]]:
    """(pk, distance) of every row, nearest first, ties by primary key."""
    return sorted(((pk, simsql.bits.hamming(fp, fingerprint)) for pk, fp in rows if pk != exclude), key=lambda r: (r[1], r[0]))


_ENGINES: dict[str, Any] = {}


def own_engine(alias: str) -> Any:
    """An engine of the tests' own on the Django database of ``alias``: it sees committed rows
    only, and its connections are not Django's (disposed with the test project)."""
    if alias not in _ENGINES:
        url = _PROJECT["servers"][alias]
        _ENGINES[alias] = create_engine(make_url(url).set(database=_database_name(url)), poolclass=NullPool)
    return _ENGINES[alias]


def sqlalchemy_model(alias: str) -> tuple[Any, type]:
    engine = own_engine(alias)
    with engine.connect() as connection:
        return engine, simsql.reflect(connection, TABLE)


def test_save_writes_what_simsql_writes(news: str) -> None:
    """save() stores the words simsql's Fingerprinter gives for the row's text; the table's
    trigger finds nothing stale; a backfill after clearing writes the same values back."""
    from tests.django_project.news.models import Article

    rows = corpus()[:6] + [("No body", None)]
    articles = add_articles(news, rows)
    stored = {a.pk: a for a in Article.objects.using(news).all()}
    for article, (title, body) in zip(articles, rows):
        row = stored[article.pk]
        assert (row.simhash, row.simhash_w1, row.simhash_w2, row.simhash_w3) == expected_words(title, body)
        assert row.simhash_b0 == simsql.bits.blocks(row.simhash)[0]
    engine, _ = sqlalchemy_model(news)
    [table] = [t for t in simsql.status(engine) if t.table == TABLE]
    assert (table.rows_fingerprinted, table.rows_missing, table.rows_stale) == (len(rows), 0, 0)
    with engine.begin() as connection:  # what backfill writes, from the table's own configuration
        connection.execute(text(f"UPDATE {TABLE} SET simhash = NULL, simhash_src = NULL"))
    simsql.backfill(engine, TABLE, workers=0)
    refilled = {a.pk: (a.simhash, a.simhash_w1, a.simhash_w2, a.simhash_w3, a.simhash_src) for a in Article.objects.using(news).all()}
    assert refilled == {pk: (a.simhash, a.simhash_w1, a.simhash_w2, a.simhash_w3, a.simhash_src) for pk, a in stored.items()}


def test_most_similar_and_within_against_brute_force(news: str) -> None:
    from tests.django_project.news.models import Article

    rows = corpus()
    articles = add_articles(news, rows)
    fingerprints = [(a.pk, a.simhash) for a in articles]
    engine, reflected = sqlalchemy_model(news)
    manager = Article.objects.using(news)
    for target in (articles[0], articles[7], TOPICS[2].upper(), "snow on the pass", articles[-1].simhash):
        fingerprint, exclude = manager.fingerprint_of(target)
        expected = brute_force(fingerprints, fingerprint, exclude)
        nearest = list(manager.most_similar(target, limit=8))
        found = [(a.pk, a.distance) for a in nearest]
        assert found == expected[:8]
        assert all(type(a.similarity) is float and a.similarity == 1 - a.distance / 64 for a in nearest)
        with Session(engine) as session:
            sa_target = target if not isinstance(target, Article) else session.get(reflected, target.pk)
            answer = session.execute(simsql.most_similar(select(reflected), sa_target, limit=8)).all()
        assert found == [(row.id, distance) for row, distance, _ in answer]
        for max_distance in (0, 3, 7, 12):
            within = sorted(a.pk for a in manager.within(target, max_distance))
            assert within == sorted(pk for pk, fp in fingerprints if simsql.bits.hamming(fp, fingerprint) <= max_distance)
            bounded = [(a.pk, a.distance) for a in manager.most_similar(target, limit=None, max_distance=max_distance)]
            assert bounded == [r for r in expected if r[1] <= max_distance]
    first = manager.most_similar(articles[0], limit=None).filter(title="Topic 1").first()
    assert first is not None and first.title == "Topic 1" and 0 <= first.similarity <= 1


def test_find_original_and_duplicates_agree_with_sqlalchemy(news: str) -> None:
    from tests.django_project.news.models import Article

    articles = add_articles(news, corpus())
    manager = Article.objects.using(news)
    engine, reflected = sqlalchemy_model(news)
    copy = "TOPIC 3!\n" + TOPICS[3].replace(",", " -").upper()
    match = manager.find_original(copy)
    assert match is not None and isinstance(match.row, Article) and match.row.title == "Topic 3"
    with Session(engine) as session:
        sa_match = simsql.find_original(session, reflected, copy)
        assert sa_match is not None and sa_match.row.id == match.row.pk and sa_match.distance == match.distance
        assert manager.duplicate_groups() == simsql.duplicate_groups(session, reflected)
        assert manager.near_duplicates() == simsql.near_duplicates(session, reflected)
    assert manager.find_original("An entirely fresh text about sailing boats and the weather at sea this summer.") is None
    with pytest.raises(ValueError, match="whole table"):
        manager.filter(title="Topic 3").find_original(copy)
    assert asyncio.run(manager.aduplicate_groups()) == manager.duplicate_groups()
    with Session(engine) as session:  # the table is wide: the faces confirm by text; the 64-bit rule on request
        pairs = {(a, b) for a, b, _ in simsql.near_duplicates(session, reflected, by_text=False)}
    fingerprints = [(a.pk, a.simhash) for a in articles]
    assert pairs == {(a, b) for a, fa in fingerprints for b, fb in fingerprints if a < b and simsql.bits.hamming(fa, fb) <= 3}


def test_other_writers_never_leave_a_stale_fingerprint(news: str) -> None:
    """QuerySet.update and raw SQL change text the trigger sees: the fingerprint is cleared, and
    ``manage.py simsql backfill`` refills it; bulk_create and bulk_update write it as save() does."""
    from django.core.management import call_command

    from tests.django_project.news.models import Article

    manager = Article.objects.using(news)
    created = manager.bulk_create([Article(title=t, body=b) for t, b in corpus()[:5]])
    assert all(a.simhash == expected_words(a.title, a.body)[0] for a in manager.all())
    first = manager.order_by("pk").first()
    assert first is not None
    manager.filter(pk=first.pk).update(body=TOPICS[4])
    assert manager.get(pk=first.pk).simhash is None
    call_command("simsql", "backfill", "--table", TABLE, database=news, stdout=io.StringIO())
    assert manager.get(pk=first.pk).simhash == expected_words(first.title, TOPICS[4])[0]
    rows = list(manager.order_by("pk"))
    for row in rows:
        row.body = TOPICS[5] + " " + str(row.pk)
    manager.bulk_update(rows, ["body"])
    assert [a.simhash for a in manager.order_by("pk")] == [expected_words(a.title, a.body)[0] for a in rows]
    assert len(created) == 5


def test_async_orm_calls(news: str) -> None:
    """Django's async ORM calls (afirst, aget, async iteration) run the queryset methods."""
    from tests.django_project.news.models import Article

    articles = add_articles(news, corpus()[:10])
    manager = Article.objects.using(news)
    expected = brute_force([(a.pk, a.simhash) for a in articles], articles[0].simhash, articles[0].pk)
    nearest_pk, nearest_distance = expected[0]

    async def run() -> tuple[Any, list[int], Any, Any]:
        nearest = await manager.most_similar(articles[0], limit=None).afirst()
        listed = [a.pk async for a in manager.most_similar(articles[0], limit=3)]
        got = await manager.within(articles[0], nearest_distance).aget(pk=nearest_pk)
        match = await manager.afind_original(TOPICS[0].upper())
        return nearest, listed, got, match

    nearest, listed, got, match = asyncio.run(run())
    assert nearest.pk == got.pk == nearest_pk and listed == [pk for pk, _ in expected[:3]]
    assert match is not None and match.row.title == "Topic 0"


def test_migrate_forward_and_back_on_a_table_with_rows(alias: str) -> None:
    """0001 creates the table and rows are written without simsql; 0002 attaches it (columns,
    trigger, registry, indexes), backfill fingerprints them; migrating back leaves the table,
    its rows and its indexes exactly as before, and nothing of simsql."""
    from django.core.management import call_command
    from django.db import connections

    migrate(alias, "0001")
    try:
        with connections[alias].cursor() as cursor:
            for title, body in corpus()[:8]:
                cursor.execute(f"INSERT INTO {TABLE} (title, body) VALUES (%s, %s)", [title, body])
        engine = own_engine(alias)
        before = _catalog(engine)
        migrate(alias, "0002")
        assert {"simhash", "simhash_src", "simhash_w3", "simhash_v7"} <= {c["name"] for c in inspect(engine).get_columns(TABLE)}
        call_command("simsql", "backfill", "--table", TABLE, database=alias, stdout=io.StringIO())
        out = io.StringIO()
        call_command("simsql", "status", database=alias, stdout=out)
        assert TABLE in out.getvalue() and "attached" in out.getvalue()
        [status] = [t for t in simsql.status(engine) if t.table == TABLE]
        assert (status.rows_fingerprinted, status.rows_missing) == (8, 0)
        call_command("makemigrations", "news", "--check", "--dry-run", verbosity=0)  # the state matches the model
        migrate(alias, "0001")
        assert _catalog(engine) == before
    finally:
        migrate(alias, "zero")
    with engine.connect() as connection:
        assert not {"simsql_registry", "simsql_alembic_version"} & set(inspect(connection).get_table_names())


def _catalog(engine: Any) -> tuple[Any, ...]:
    with engine.connect() as connection:
        found = inspect(connection)
        rows = connection.execute(text(f"SELECT id, title, body FROM {TABLE} ORDER BY id")).all()
        columns = [(c["name"], str(c["type"])) for c in found.get_columns(TABLE)]
        indexes = sorted(str(i["name"]) for i in found.get_indexes(TABLE))
        return columns, indexes, rows, sorted(found.get_table_names())


def test_expressions_are_simsqls_sql(django_project: dict[str, str]) -> None:
    """HammingDistance and the blocks compile to the SQL simsql's SQLAlchemy constructs give."""
    from sqlalchemy import literal_column

    from simsql.dialects import hamming_expression
    from simsql.django.connection import dialect_for
    from simsql.django.expressions import sql_template

    for vendor in ("postgresql", "mysql"):
        expected = str(hamming_expression(literal_column("x"), literal_column("y")).compile(dialect=dialect_for(vendor)))
        assert sql_template(vendor, "hamming") % {"a0": "x", "a1": "y"} == expected


def test_checks_refuse_bad_models(django_project: dict[str, str]) -> None:
    """No source, a source that is not text, a database simsql cannot serve: errors at check time."""
    from django.db import models
    from django.test.utils import isolate_apps

    from simsql.django.checks import check_model
    from simsql.django.models import SimHashModel, WideSimHashModel

    with isolate_apps("tests.django_project.news"):

        class NoSource(WideSimHashModel):
            body = models.TextField()

            class Meta:
                app_label = "news"

        class NotText(SimHashModel):
            simhash_source = ("title", "views", "missing")
            title = models.CharField(max_length=20)
            views = models.IntegerField()

            class Meta:
                app_label = "news"

        class AsSet(SimHashModel):
            simhash_source = {"body"}  # type: ignore[assignment]
            body = models.TextField()

            class Meta:
                app_label = "news"

    with isolate_apps("tests.django_project.news"):

        class OnSQLite(SimHashModel):
            simhash_source = ("body",)
            body = models.TextField()

            class Meta:
                app_label = "sqlite_only"

    assert [e.id for e in check_model(NoSource)] == ["simsql.E001"]
    assert sorted(e.id for e in check_model(NotText)) == ["simsql.E003", "simsql.E004"]
    assert [e.id for e in check_model(AsSet)] == ["simsql.E002"]
    errors = check_model(OnSQLite)
    assert [e.id for e in errors] == ["simsql.E006"] and "sqlite" in errors[0].msg
    NotText.simhash_source = ("title", "views")
    with pytest.raises(TypeError, match="must hold str"):  # save() refuses before writing anything
        NotText(title="a", views=3).simsql_fill()


def test_makemigrations_writes_add_simhash_for_a_new_model(alias: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new model: makemigrations writes CreateModel without simsql's fields, then InstallSimSQL
    and AddSimHash in a migration of its own; migrate runs both, the model works; migrated back
    while another table is attached, simsql's objects stay, and the last one out removes them."""
    import uuid

    from django.core.management import call_command
    from django.test.utils import override_settings

    from tests.django_project.blog.models import Post

    package = f"blog_migrations_{uuid.uuid4().hex[:8]}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with override_settings(MIGRATION_MODULES={"blog": package}):
        call_command("makemigrations", "blog", verbosity=0)
        written = sorted(path.name for path in (tmp_path / package).glob("0*.py"))
        assert written == ["0001_initial.py", "0002_simhash_post.py"]
        assert "simhash" not in (tmp_path / package / written[0]).read_text()
        attach = " ".join((tmp_path / package / written[1]).read_text().replace('"', "'").split())
        assert "operations = [ simsql.django.operations.InstallSimSQL( ), simsql.django.operations.AddSimHash( model_name='Post', source=['body'], wide=False, ), ]" in attach
        call_command("makemigrations", "blog", "--check", "--dry-run", verbosity=0)
        call_command("migrate", "blog", database=alias, verbosity=0)
        try:
            posts = [Post(body=body) for body in TOPICS]
            for post in posts:
                post.save(using=alias)
            nearest = Post.objects.using(alias).most_similar(TOPICS[1].upper(), limit=1)[0]
            assert (nearest.pk, nearest.distance) == (posts[1].pk, 0)
            [status] = [t for t in simsql.status(own_engine(alias)) if t.table == "blog_post"]
            assert (status.mode, status.rows_fingerprinted, status.rows_stale) == ("columns", len(TOPICS), 0)
        finally:
            migrate(alias, "0002")  # news attached too: blog's InstallSimSQL keeps simsql's objects
            with pytest.warns(UserWarning, match="simsql's objects are kept"):
                call_command("migrate", "blog", "zero", database=alias, verbosity=0)
            assert "simsql_registry" in inspect(own_engine(alias)).get_table_names()
            migrate(alias, "zero")  # the last one out removes them
    assert not {"blog_post", "news_article", "simsql_registry"} & set(inspect(own_engine(alias)).get_table_names())


def test_a_writer_of_another_configuration_is_refused(news: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """save() and bulk_create refuse fingerprints of another configuration than the table's
    (recorded in simsql's registry by AddSimHash), before writing anything."""
    from tests.django_project.news.models import Article

    monkeypatch.setattr(Article, "simhash_fingerprinter", simsql.Fingerprinter(version=3, shingle_size=2))
    with pytest.raises(simsql.text.errors.ConfigMismatch):
        Article(title="Rail", body=TOPICS[0]).save(using=news)
    with pytest.raises(simsql.text.errors.ConfigMismatch):
        Article.objects.using(news).bulk_create([Article(title="Rail", body=TOPICS[0])])
    assert not Article.objects.using(news).exists()


def test_manage_py_simsql_and_check(news: str) -> None:
    """``manage.py simsql`` runs simsql's commands on the ``--database`` named (before or after
    the command); ``manage.py check`` passes on the test project and its routers."""
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from tests.django_project.news.models import Article

    articles = add_articles(news, corpus()[:10] + [("Topic 0", TOPICS[0].upper() + "!")])  # a copy of the first
    out = io.StringIO()
    call_command("simsql", "similar", "--table", TABLE, "--id", str(articles[0].pk), "--limit", "3", "--format", "json", database=news, stdout=out)
    expected = brute_force([(a.pk, a.simhash) for a in articles], articles[0].simhash, articles[0].pk)[:3]
    assert [str(pk) for pk, _ in expected] == [str(row.get("id", row.get("key"))) for row in __import__("json").loads(out.getvalue())]
    out = io.StringIO()
    call_command("simsql", "dupes", "--table", TABLE, "--by", "fingerprint", "--max-distance", "3", "--format", "json", "--database", news, stdout=out)
    pairs = {(a.pk, b.pk) for a in articles for b in articles if a.pk < b.pk and simsql.bits.hamming(a.simhash, b.simhash) <= 3}
    found = __import__("json").loads(out.getvalue() or "[]")
    assert pairs and len(found) == len(pairs), out.getvalue()
    with pytest.raises(CommandError, match="exit status 1"):
        call_command("simsql", "backfill", "--table", "no_such_table", database=news, stdout=io.StringIO(), stderr=io.StringIO())
    call_command("check", stdout=io.StringIO())
    assert Article.objects.using(news).count() == 11


def test_within_lookup(news: str) -> None:
    """``simhash__within`` is the queryset's ``within`` as a lookup, in Q objects too."""
    from django.db.models import Q

    from tests.django_project.news.models import Article

    articles = add_articles(news, corpus())
    manager = Article.objects.using(news)
    for target, max_distance in ((articles[0], 3), (TOPICS[2], 7), (articles[5].simhash, 12)):
        expected = sorted(a.pk for a in manager.within(target, max_distance))
        assert sorted(manager.filter(simhash__within=(target, max_distance)).values_list("pk", flat=True)) == expected
    either = manager.filter(Q(simhash__within=TOPICS[0]) | Q(title="Topic 1")).values_list("pk", flat=True)
    assert sorted(either) == sorted({*manager.within(TOPICS[0]).values_list("pk", flat=True), *manager.filter(title="Topic 1").values_list("pk", flat=True)})


ONE_MIGRATION = '''
from django.db import migrations, models

from simsql.django.operations import AddSimHash


class Migration(migrations.Migration):
    initial = True
    dependencies = []
    operations = [
        migrations.CreateModel(
            name="Post",
            fields=[("id", models.BigAutoField(primary_key=True, serialize=False)), ("body", models.TextField())],
        ),
        AddSimHash("post", source=["body"], wide=False),
    ]
'''


def test_add_simhash_in_the_transaction_creating_its_table(alias: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """AddSimHash runs on the migration's own connection, in its transaction: in the atomic
    migration that creates its table (PostgreSQL's DDL is transactional) it attaches the table
    created a moment before; migrated back, the table and the attachment go."""
    import uuid

    from django.core.management import call_command
    from django.test.utils import override_settings

    from tests.django_project.blog.models import Post

    package = f"blog_one_{uuid.uuid4().hex[:8]}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "0001_initial.py").write_text(ONE_MIGRATION)
    monkeypatch.syspath_prepend(str(tmp_path))
    with override_settings(MIGRATION_MODULES={"blog": package}):
        call_command("migrate", "blog", database=alias, verbosity=0)
        try:
            Post(body=TOPICS[0]).save(using=alias)
            assert Post.objects.using(alias).most_similar(TOPICS[0].upper(), limit=1)[0].distance == 0
            [status] = [t for t in simsql.status(own_engine(alias)) if t.table == "blog_post"]
            assert (status.mode, status.rows_fingerprinted) == ("columns", 1)
        finally:
            call_command("migrate", "blog", "zero", database=alias, verbosity=0)
        assert "blog_post" not in inspect(own_engine(alias)).get_table_names()
        simsql.alembic.downgrade(own_engine(alias))  # what the attach installed (no InstallSimSQL here)
