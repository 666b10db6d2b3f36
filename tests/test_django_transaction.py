"""simsql.django on the alias's own connection, inside whatever transaction is open (issue 40).

The fixtures are tests/test_django.py's: the test project configured once with both servers,
``news`` migrated forward for a test and back to zero afterwards. A Django ``TestCase`` is run
here as ``manage.py test`` runs it (its class-wide and per-test atomic blocks), from inside pytest.
Every answer of a queryset is compared with simsql's SQLAlchemy function on the same table and
arguments, read through a connection of the test's own (rows committed by then).
"""

from __future__ import annotations

import io
import random
import unittest
from typing import Any

import pytest
from sqlalchemy import create_engine, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

import simsql
from tests.test_django import TOPICS, _database_name, add_articles, alias, corpus, django_project, news  # noqa: F401  fixtures

LONG = " ".join(TOPICS) + " " + " ".join(reversed(TOPICS))
"""About 220 words of news prose: a 2% edit of it changes four or five words."""


def edited(body: str, share: float = 0.02, seed: int = 3) -> str:
    """``body`` with ``share`` of its words replaced by other words."""
    rng = random.Random(seed)
    words = body.split()
    for index in rng.sample(range(len(words)), max(1, round(len(words) * share))):
        words[index] = rng.choice(["meanwhile", "reportedly", "locally", "officially", "suddenly"])
    return " ".join(words)


def run_test_case(case: type[unittest.TestCase]) -> unittest.TestResult:
    """Run a Django ``TestCase`` as the test runner does (setUpClass's atomic blocks included)."""
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(case).run(result)
    return result


def own_engine(django_project: dict[str, str], alias: str) -> Any:
    """An engine of the test's own on the Django database of ``alias`` (committed rows only)."""
    url = make_url(django_project[alias]).set(database=_database_name(django_project[alias]))
    return create_engine(url, poolclass=NullPool)


def test_the_issue_example_in_a_testcase(news: str) -> None:
    """The issue's first example: inside ``TestCase`` and ``atomic``, a row saved a moment ago is
    the original of a 2%-edited copy; the other whole-table questions see it too."""
    from django.db import transaction
    from django.test import TestCase

    from tests.django_project.news.models import Article

    found: dict[str, Any] = {}

    class InTransactionTests(TestCase):
        databases = {news}

        def test_copy_is_found(self) -> None:
            with transaction.atomic(using=news):
                article = Article.objects.using(news).create(title="Regional news", body=LONG)
                twin = Article.objects.using(news).create(title="Regional news", body=LONG + " Again.")
                submitted = Article(title="Regional news", body=edited(LONG))
                match = Article.objects.using(news).find_original(submitted)
                self.assertIsNotNone(match)
                found["match"] = (match.row.pk, match.distance, article.pk)
                found["pairs"] = Article.objects.using(news).near_duplicates(max_distance=3)
                found["groups"] = Article.objects.using(news).duplicate_groups(max_distance=3)
                found["nearest"] = [a.pk for a in Article.objects.using(news).most_similar(article, limit=1)]
                found["within"] = sorted(Article.objects.using(news).within(article, 3).values_list("pk", flat=True))
                found["ids"] = (article.pk, twin.pk)

    result = run_test_case(InTransactionTests)
    assert result.wasSuccessful(), result.failures + result.errors
    article_pk, twin_pk = found["ids"]
    assert found["match"][0] in (article_pk, twin_pk) and found["match"][2] == article_pk
    assert [(a, b) for a, b, _ in found["pairs"]] == [(article_pk, twin_pk)]
    assert found["groups"] == [[article_pk, twin_pk]]
    assert found["nearest"] == [twin_pk] and found["within"] == [article_pk, twin_pk]
    from tests.django_project.news.models import Article as Reloaded

    assert not Reloaded.objects.using(news).exists()  # the TestCase rolled everything back


def test_atomic_requests_and_a_rolled_back_block(news: str) -> None:
    """In ``atomic()`` (what ``ATOMIC_REQUESTS`` wraps a view in) simsql reads what the block
    wrote; after the block rolls back, nothing of it is seen or left."""
    from django.db import transaction

    from tests.django_project.news.models import Article

    manager = Article.objects.using(news)

    class Rollback(Exception):
        pass

    with pytest.raises(Rollback):
        with transaction.atomic(using=news):
            Article.objects.using(news).create(title="Harvest", body=LONG)
            assert manager.find_original(edited(LONG, seed=5)) is not None
            raise Rollback
    assert manager.find_original(edited(LONG, seed=5)) is None
    assert manager.duplicate_groups() == [] and not manager.exists()


def _server_connections(engine: Any, database: str) -> int:
    """How many sessions are open on ``database`` (the counting one left out)."""
    with engine.connect() as connection:
        if connection.dialect.name == "postgresql":
            query = "SELECT count(*) FROM pg_stat_activity WHERE datname = :db AND pid <> pg_backend_pid()"
        else:
            query = "SELECT count(*) FROM information_schema.processlist WHERE db = :db AND id <> CONNECTION_ID()"
        return int(connection.execute(text(query), {"db": database}).scalar_one())


def test_simsql_opens_no_connection_of_its_own(news: str, django_project: dict[str, str]) -> None:
    """The connection count with simsql's calls equals the count without them (Django's, one per
    thread that used the database; tests/test_django_drivers.py counts exactly one in a process
    of its own, migrations included)."""
    from django.db import connections

    from tests.django_project.news.models import Article

    add_articles(news, corpus())
    database = _database_name(django_project[news])
    counter = own_engine(django_project, news)
    try:
        connections[news].ensure_connection()
        before = _server_connections(counter, database)
        manager = Article.objects.using(news)
        assert manager.find_original(TOPICS[3].upper()) is not None
        manager.near_duplicates()
        manager.duplicate_groups()
        list(manager.most_similar(TOPICS[0], limit=3))
        list(manager.within(TOPICS[0], 7))
        Article(title="One more", body=TOPICS[1] + " Really.").save(using=news)
        assert _server_connections(counter, database) == before
    finally:
        counter.dispose()


def _reflected(engine: Any) -> type:
    with engine.connect() as connection:
        return simsql.reflect(connection, "news_article")


MOST_SIMILAR_ARGUMENTS: list[dict[str, Any]] = [
    {},
    {"limit": 3},
    {"limit": 5, "max_distance": 12},
    {"limit": 4, "exact": False},
    {"limit": 4, "exact": True, "scan": False, "probe_radius": 1},
    {"limit": 2, "max_distance": 3},
]


def test_querysets_answer_what_simsqls_functions_answer(news: str, django_project: dict[str, str]) -> None:
    """most_similar (plain, filtered, each argument), within, find_original, near_duplicates and
    duplicate_groups: the Django faces and simsql's functions, side by side."""
    from tests.django_project.news.models import Article

    articles = add_articles(news, corpus())
    engine = own_engine(django_project, news)
    try:
        reflected = _reflected(engine)
        manager = Article.objects.using(news)
        with Session(engine) as session:
            for target in (TOPICS[2].upper(), articles[7], articles[-1].simhash):
                sa_target = session.get(reflected, target.pk) if isinstance(target, Article) else target
                for arguments in MOST_SIMILAR_ARGUMENTS:
                    django = [(a.pk, a.distance) for a in manager.most_similar(target, **arguments)]
                    rows = session.execute(simsql.most_similar(select(reflected), sa_target, **arguments)).all()
                    assert django == [(row.id, distance) for row, distance, _ in rows], (target, arguments)
                filtered = [(a.pk, a.distance) for a in manager.filter(title="Topic 1").most_similar(target, limit=3)]
                stmt = select(reflected).where(reflected.title == "Topic 1")
                rows = session.execute(simsql.most_similar(stmt, sa_target, limit=3)).all()
                assert filtered == [(row.id, distance) for row, distance, _ in rows] and filtered
                for max_distance in (0, 3, 9):
                    fingerprint, _ = manager.fingerprint_of(target)
                    within = sorted(manager.within(target, max_distance).values_list("pk", flat=True))
                    similar = session.scalars(select(reflected.id).where(simsql.similar_to(reflected, fingerprint, max_distance))).all()
                    assert within == sorted(similar)
            for options in ({}, {"max_distance": 20}, {"min_containment": None}, {"candidates": 2}):
                copy = "TOPIC 4\n" + TOPICS[4].replace(",", ";")
                match = manager.find_original(copy, **options)
                sa_match = simsql.find_original(session, reflected, copy, **options)
                assert (match.row.pk, match.distance) == (sa_match.row.id, sa_match.distance), options
            for max_distance in (0, 2, 3):  # the 64-bit rule (a wide table is deduplicated by text unless told)
                rule = {"by_text": False}
                assert manager.near_duplicates(max_distance, **rule) == simsql.near_duplicates(session, reflected, max_distance, **rule)
                assert manager.duplicate_groups(max_distance, **rule) == simsql.duplicate_groups(session, reflected, max_distance, **rule)
            for options in ({}, {"min_containment": 0.9}, {"wide_distance": 32, "probe_radius": 0}):  # by text
                assert manager.near_duplicates(**options) == simsql.near_duplicates(session, reflected, **options)
                assert manager.duplicate_groups(**options) == simsql.duplicate_groups(session, reflected, **options)
    finally:
        engine.dispose()


def test_null_never_ranks(news: str) -> None:
    """A row whose text has no words stores NULL: it never comes before a ranked row, whatever
    the server, in the documented expressions ordered either way, or in most_similar."""
    from simsql.django.expressions import HammingDistance, Similarity
    from tests.django_project.news.models import Article

    add_articles(news, [("...", None), *corpus()[:6], ("!!!", None)])
    manager = Article.objects.using(news)
    fp = manager.fingerprint_of(TOPICS[0])[0]
    annotated = manager.annotate(d=HammingDistance("simhash", fp), s=Similarity("simhash", fp))
    for ordering, key in (("d", "d"), ("-d", "d"), ("s", "s"), ("-s", "s")):
        values = [getattr(row, key) for row in annotated.order_by(ordering)]
        ranked = [value for value in values if value is not None]
        assert values == ranked + [None, None], (ordering, values)
        assert ranked == sorted(ranked, reverse=ordering.startswith("-"))
    top = [row.d for row in annotated.order_by("d")[:3]]
    assert None not in top
    assert all(a.distance is not None for a in manager.most_similar(TOPICS[0], limit=None))
    assert len(list(manager.most_similar(TOPICS[0], limit=None))) == 6


def test_every_argument_is_checked_and_named(news: str) -> None:
    """Bad arguments are refused with an error naming the argument, and nothing is written."""
    from django.db import transaction

    from tests.django_project.news.models import Article

    add_articles(news, corpus()[:5])
    manager = Article.objects.using(news)
    bad: list[tuple[Any, str]] = [
        (lambda: manager.most_similar(TOPICS[0], limit="5"), "limit"),
        (lambda: manager.most_similar(TOPICS[0], limit=0), "limit"),
        (lambda: manager.most_similar(TOPICS[0], max_distance="3"), "max_distance"),
        (lambda: manager.most_similar(TOPICS[0], exact="yes"), "exact"),
        (lambda: manager.most_similar(TOPICS[0], probes=0), "probes"),
        (lambda: manager.most_similar(TOPICS[0], probe_radius=9), "probe_radius"),
        (lambda: list(manager.filter(simhash__within=(TOPICS[0],))), "within"),
        (lambda: list(manager.filter(simhash__within=(TOPICS[0], 3, 4))), "within"),
        (lambda: list(manager.filter(simhash__within=(TOPICS[0], "3"))), "max_distance"),
        (lambda: manager.within(TOPICS[0], max_distance=65), "max_distance"),
        (lambda: manager.within(3.5), "target"),
        (lambda: manager.find_original(TOPICS[0], candidates=0), "candidates"),
        (lambda: manager.find_original(TOPICS[0], min_containment=2), "min_containment"),
        (lambda: manager.near_duplicates(max_distance=9), "max_distance"),
        (lambda: manager.duplicate_groups(max_distance="2"), "max_distance"),
    ]
    for call, name in bad:
        with transaction.atomic(using=news):
            with pytest.raises((TypeError, ValueError)) as caught:
                call()
            assert name in str(caught.value), (name, str(caught.value))
    assert manager.count() == 5


def test_work_that_commits_on_its_own_refuses_inside_atomic(news: str) -> None:
    """A backfill commits batch by batch: inside an atomic block it refuses and says what to do."""
    from django.core.management import call_command
    from django.core.management.base import CommandError
    from django.db import transaction

    from tests.django_project.news.models import Article

    add_articles(news, corpus()[:3])
    with transaction.atomic(using=news):
        with pytest.raises(CommandError, match="outside"):
            call_command("simsql", "backfill", "--table", "news_article", database=news, stdout=io.StringIO())
    assert Article.objects.using(news).count() == 3


def test_two_simsql_models_in_one_app_migrate_and_squash(alias: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """One makemigrations for an app with two simsql models writes one leaf; it migrates
    forward, back to zero and forward again; a squash of it migrates too."""
    import uuid

    from django.core.management import call_command
    from django.db import connections
    from django.db.migrations.loader import MigrationLoader
    from django.test.utils import override_settings

    from tests.django_project.shelf.models import Memo, Note

    package = f"shelf_migrations_{uuid.uuid4().hex[:8]}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with override_settings(MIGRATION_MODULES={"shelf": package}):
        call_command("makemigrations", "shelf", verbosity=0)
        loader = MigrationLoader(connections[alias], ignore_no_migrations=True)
        assert len(loader.graph.leaf_nodes("shelf")) == 1, sorted(loader.graph.nodes)
        call_command("makemigrations", "shelf", "--check", "--dry-run", verbosity=0)
        try:
            for _ in range(2):
                call_command("migrate", "shelf", database=alias, verbosity=0)
                Memo(subject="Rail", body=TOPICS[0]).save(using=alias)
                Note(text=TOPICS[1]).save(using=alias)
                assert Memo.objects.using(alias).find_original(TOPICS[0].upper()) is not None
                assert Note.objects.using(alias).most_similar(TOPICS[1], limit=1)[0].distance == 0
                call_command("migrate", "shelf", "zero", database=alias, verbosity=0)
            [leaf] = loader.graph.leaf_nodes("shelf")
            call_command("squashmigrations", "shelf", leaf[1], "--noinput", verbosity=0)
            squashed = [path.name for path in (tmp_path / package).glob("*squashed*.py")]
            assert len(squashed) == 1
            call_command("migrate", "shelf", database=alias, verbosity=0)
            Memo(subject="Rail", body=TOPICS[0]).save(using=alias)
            assert Memo.objects.using(alias).most_similar(f"Rail\n{TOPICS[0]}", limit=1)[0].distance == 0
        finally:
            call_command("migrate", "shelf", "zero", database=alias, verbosity=0)


def test_threads_each_run_on_their_own_django_connection(news: str) -> None:
    """Django's connections are per thread, and so is simsql's use of them: threads asking at
    once each get right answers on their own connection (no statement of one on another's)."""
    import threading

    from django.db import connections

    from simsql.django.connection import sqlalchemy_connection
    from tests.django_project.news.models import Article

    articles = add_articles(news, corpus())
    expected = [a.pk for a in Article.objects.using(news).most_similar(articles[5], limit=4)]
    answers: list[Any] = []
    used: list[Any] = []  # each thread's DBAPI connection (kept: no id is reused)

    def ask() -> None:
        try:
            manager = Article.objects.using(news)
            for _ in range(5):
                match = manager.find_original("TOPIC 2\n" + TOPICS[2].upper())
                nearest = [a.pk for a in manager.most_similar(articles[5], limit=4)]
                answers.append((match.row.title if match else None, nearest, manager.duplicate_groups()))
            borrowed = sqlalchemy_connection(news).connection.dbapi_connection
            used.append((connections[news].connection, borrowed.dbapi_connection))
        finally:
            connections[news].close()

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    groups = Article.objects.using(news).duplicate_groups()
    assert answers == [("Topic 2", expected, groups)] * 20
    assert all(django is simsqls for django, simsqls in used)  # simsql's statements ran on the thread's own
    assert len({id(django) for django, _ in used}) == 4 and all(django is not connections[news].connection for django, _ in used)


def test_partition_lists_on_a_django_model(alias: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``ListsModel``: fit on the database's own connection (refused inside an atomic block),
    ``most_similar(..., probes=N)`` answers what simsql's function answers on the same table,
    rows saved after the fit are read until placed, then placed; drop removes the lists."""
    import uuid

    from django.core.management import call_command
    from django.db import transaction
    from django.test.utils import override_settings

    from simsql.django.connection import InsideAtomicBlock
    from tests.django_project.shelf.models import Clipping
    from tests.test_django import own_engine

    package = f"shelf_lists_{uuid.uuid4().hex[:8]}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with override_settings(MIGRATION_MODULES={"shelf": package}):
        call_command("makemigrations", "shelf", verbosity=0)
        call_command("migrate", "shelf", database=alias, verbosity=0)
        try:
            manager = Clipping.objects.using(alias)
            manager.bulk_create([Clipping(text=f"{body} {number}") for number, (_, body) in enumerate(corpus() * 8)])
            with transaction.atomic(using=alias), pytest.raises(InsideAtomicBlock, match="outside"):
                manager.fit_lists(lists=4)
            fitted = manager.fit_lists(lists=4)
            assert fitted.lists == 4 and fitted.left_behind == 0
            late = Clipping(text=TOPICS[4] + " late")
            late.save(using=alias)
            engine = own_engine(alias)
            with engine.connect() as bound:
                reflected = simsql.reflect(bound, "shelf_clipping")
            with Session(engine) as session:
                for target in (TOPICS[4], TOPICS[0].upper()):
                    for probes in (1, 2, 4):
                        django = [(c.pk, c.distance) for c in manager.most_similar(target, limit=5, probes=probes)]
                        rows = session.execute(simsql.most_similar(select(reflected), target, limit=5, probes=probes)).all()
                        assert django == [(row.id, distance) for row, distance, _ in rows], (target, probes)
            assert late.pk in [c.pk for c in manager.most_similar(TOPICS[4] + " late", limit=1, probes=1)]
            assert manager.place_lists() == 1 and manager.get(pk=late.pk).simhash_part is not None
            assert manager.drop_lists() is True
        finally:
            call_command("migrate", "shelf", "zero", database=alias, verbosity=0)


PARITY = {
    # face: (simsql's definition, its parameters the Django face does not take and why)
    "most_similar": (simsql.most_similar, {"stmt": "the queryset itself", "exclude": "the queryset's own .exclude()"}),
    "near_duplicates": (simsql.near_duplicates, {"session": "the alias's connection", "model": "the queryset's model"}),
    "duplicate_groups": (simsql.duplicate_groups, {"session": "the alias's connection", "model": "the queryset's model"}),
}


@pytest.mark.parametrize("face", sorted(PARITY))
def test_every_django_face_takes_the_definitions_parameters(django_project: dict[str, str], face: str) -> None:
    """Django's queryset faces call simsql's definitions; they must also take every parameter of
    them, with the same defaults (``recall`` of the lists and the wide dedupe's
    ``min_containment`` arrived in the definitions after the faces were written, and were missing)."""
    import inspect

    from simsql.django.models import SimHashQuerySet

    definition, left_to_django = PARITY[face]
    wanted = {
        name: parameter.default
        for name, parameter in inspect.signature(definition).parameters.items()
        if name not in left_to_django
    }
    parameters = inspect.signature(getattr(SimHashQuerySet, face)).parameters
    taken = {name: parameter.default for name, parameter in parameters.items() if name != "self"}
    taken.pop(next(iter(taken)), None) if face == "most_similar" else None  # the target, first on both sides
    wanted.pop("target", None)
    assert taken == wanted
