"""simsql.django as a new user met it (issue 35's trial of docs/django.md): what tripped them up.

The fixtures are tests/test_django.py's: the test project configured once with both servers,
``news`` migrated forward for a test and back to zero afterwards.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from tests.test_django import TOPICS, _drop, add_articles, alias, corpus, django_project, news  # noqa: F401  fixtures

DISGUISED = TOPICS[3].upper().replace(",", ";").replace(".", "!") + " The council said it would look for the money in next year's budget."


def test_find_original_of_an_unsaved_instance(news: str) -> None:
    """A form has the fields of the row it would save: ``find_original`` takes that unsaved
    instance and checks the text it would be stored with (``simhash_source`` joined), so a
    disguised copy of a stored article (its title, the body recased, repunctuated and a sentence
    longer) is found, where the body alone is too far from the stored title and body."""
    from tests.django_project.news.models import Article

    add_articles(news, corpus())
    manager = Article.objects.using(news)
    match = manager.find_original(Article(title="Topic 3", body=DISGUISED))
    assert match is not None and match.row.title == "Topic 3" and match.row.body.startswith(TOPICS[3][:20])
    assert manager.find_original(Article(title="Sailing", body="Boats raced along the coast all summer in fine weather.")) is None
    saved = manager.get(pk=match.row.pk)
    with pytest.raises(ValueError, match="unsaved"):  # its own row would be its original
        manager.find_original(saved)
    with pytest.raises(TypeError, match="Article"):
        manager.find_original(42)


def test_the_test_runner_drops_its_database_after_simsql_used_it(alias: str, django_project: dict[str, str]) -> None:
    """``manage.py test``: Django creates a test database, the tests save rows (simsql checks
    the table's configuration) and ask for an original, and Django drops it, which PostgreSQL
    refuses while a connection is open on it: simsql works on Django's connection and opens none."""
    from django.db import connections

    from tests.django_project.news.models import Article

    connection = connections[alias]
    old_name, old_test = connection.settings_dict["NAME"], dict(connection.settings_dict["TEST"])
    test_name = f"{old_name}_t"
    connection.settings_dict["TEST"] = {**old_test, "NAME": test_name}
    destroyed = False
    try:
        connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
        Article(title="Rail", body=TOPICS[0]).save(using=alias)
        assert Article.objects.using(alias).find_original(TOPICS[0].upper()) is not None
        connection.creation.destroy_test_db(old_name, verbosity=0)
        destroyed = True
    finally:
        connection.settings_dict["NAME"], connection.settings_dict["TEST"] = old_name, old_test
        if not destroyed:
            connection.close()
            _drop(django_project[alias], test_name)
    assert destroyed


def test_makemigrations_lists_the_operations_as_additions() -> None:
    """``makemigrations`` prints each operation after its category's sign: simsql's are
    additions (``+``), not Django's ``?`` of an operation of unknown kind."""
    pytest.importorskip("django")
    from simsql.django.operations import AddSimHash, InstallSimSQL

    assert InstallSimSQL().formatted_description() == "+ Install simsql's own objects"
    assert AddSimHash("Article", source=["title", "body"]).formatted_description() == "+ Attach simsql to Article (source title, body)"


def test_migrating_back_while_another_table_is_attached_says_what_happens(news: str) -> None:
    """InstallSimSQL migrated back while another table still uses simsql's objects keeps them
    and says when they go (with the last attached table migrated back): not the command line's
    advice to run ``simsql db downgrade``."""
    from django.db import connections

    from simsql.django.operations import InstallSimSQL

    with warnings.catch_warnings(record=True) as caught, connections[news].schema_editor() as editor:
        warnings.simplefilter("always")
        InstallSimSQL().database_backwards("blog", editor, Any, Any)
    [warning] = [w for w in caught if "simsql's objects are kept" in str(w.message)]
    message = str(warning.message)
    assert "news_article" in message and "migrated back" in message and "db downgrade" not in message, message
