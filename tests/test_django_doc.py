"""docs/django.md to the letter, on PostgreSQL and on MySQL/MariaDB (issue 35's "Done when").

A project of ``django-admin startproject`` in a directory of its own, run as separate processes:
the page's ``sh django`` commands as typed, its files (``python news/models.py``, views, URLs,
template, form, tests, fixture) written where their labels say, its settings put into the
generated ``settings.py``. The only thing put in is the server, where the page puts the user's.
The migration ``makemigrations`` writes is the page's ``python migration`` block. Then what a
user does with them: save articles (one without a word), run the page's ``python queries``
block, open an article's page, submit a disguised copy and a new text through the form, run the
page's tests (``manage.py test news``: a ``TestCase`` with a fixture), compare ``manage.py simsql
status`` with ``simsql status``, and migrate ``news`` back to zero, after which the catalogs hold
nothing of simsql.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests.command_line import shell
from tests.django_project.settings import database
from tests.readme import DOCS, blocks, commands
from tests.test_django import _create, _drop

DOC = DOCS / "django.md"
BIN = Path(sys.executable).parent

ARTICLES = [
    ("Rail strike on Monday", "Train drivers will strike on Monday over pay, the union said; most regional lines will run no trains at all, and commuters are told to work from home."),
    ("Harvest late", "A wet spring delayed the wheat harvest by three weeks in the north, farmers said on Friday, and prices of flour are expected to rise before the autumn."),
    ("Cycle lane", "The city council approved a new cycle lane along the river after a long public consultation in which most residents supported the plan."),
    ("Rail strike: more lines", "Train drivers will strike on Monday over pay, the union said; most regional lines and some intercity lines will run no trains at all, and commuters are told to work from home."),
    ("Museum wing", "The museum will open a new wing for modern art next spring, its director announced today, after a donation from a local collector."),
]  # fmt: skip

TRIAL = '''
import json
from django.test import Client
from django.test.utils import setup_test_environment
from news.forms import SubmissionForm
from news.models import Article

for title, body in ARTICLES:
    Article(title=title, body=body).save()
wordless = Article.objects.create(title="...", body="!!!")  # no word: a NULL fingerprint
found = {"Article": Article}
exec(QUERIES, found)
queried = {"rail": [a.title for a in found["rail"]], "near": list(found["near"]), "ranked": [row.d for row in found["ranked"]]}
Article.objects.filter(pk=wordless.pk).delete()
rail = Article.objects.get(title="Rail strike on Monday")
setup_test_environment()
page = Client().get(f"/articles/{rail.pk}/")
harvest = Article.objects.get(title="Harvest late")
disguised = harvest.body.upper().replace(",", ";").replace(".", "!") + " Bakers in the capital have already raised their prices."
copy = SubmissionForm(data={"title": harvest.title, "body": disguised})
fresh = SubmissionForm(data={"title": "Sailing", "body": "Boats raced along the coast all summer, and the regatta drew crowds to the harbour."})
edit = SubmissionForm(data={"title": harvest.title, "body": harvest.body + " It rained again."}, instance=harvest)
print(json.dumps({
    "status": page.status_code, "page": page.content.decode(), "copy_valid": copy.is_valid(), "copy_errors": copy.errors.get("__all__", []),
    "harvest": harvest.pk, "fresh_valid": fresh.is_valid(), "edit_valid": edit.is_valid(),
    "related": [a.title for a in Article.objects.most_similar(rail, limit=5)],
    **queried,
}))
'''


def doc_block(info: str) -> str:
    (code,) = blocks(info, DOC)
    return code


@pytest.fixture(params=["postgresql", "mysql"])
def server(request: pytest.FixtureRequest, database_url: str) -> Iterator[tuple[str, str]]:
    """(SQLAlchemy URL of a database of the test's own, the same on the suite's server)."""
    pytest.importorskip("django")
    url = database_url if request.param == "postgresql" else request.getfixturevalue("mysql_url")
    name = f"{make_url(url).database or 'simsql'}_djdoc"
    _create(url, name)
    yield url, make_url(url).set(database=name).render_as_string(hide_password=False)
    _drop(url, name)


def run(command: str, project: Path) -> str:
    """A command of the page as typed in the project's directory; its output."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    for name in ("SIMSQL_DATABASE_URL", "DATABASE_URL", "DJANGO_SETTINGS_MODULE"):
        env.pop(name, None)
    result = shell(command, project, env)
    assert result.returncode == 0, f"{command}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    return result.stdout


def configure(project: Path, url: str) -> None:
    """The page's settings in startproject's ``settings.py``: its apps added, its database with
    the test's server in place of the user's (the MySQL/MariaDB block's, PyMySQL first, there)."""
    mysql = make_url(url).get_backend_name() in ("mysql", "mariadb")
    apps, documented = _settings("python newsroom/settings.py"), {}
    if mysql:
        documented = _settings("python newsroom/settings.py on MySQL or MariaDB")
    server = {key: value for key, value in database(url, str(make_url(url).database)).items() if key in ("NAME", "USER", "PASSWORD", "HOST", "PORT")}
    entry = {**(documented or apps)["DATABASES"]["default"], **server}
    code = doc_block("python newsroom/settings.py on MySQL or MariaDB")
    head = code[: code.index("DATABASES")] if mysql else ""
    settings = project / "newsroom" / "settings.py"
    generated = settings.read_text()
    settings.write_text(f"{head}{generated}\nINSTALLED_APPS += {apps['INSTALLED_APPS']!r}\nDATABASES = {{'default': {entry!r}}}\n")


def _settings(label: str) -> dict[str, Any]:
    """The names a settings block of the page sets."""
    found: dict[str, Any] = {}
    exec(compile(doc_block(label), f"django.md {label}", "exec"), {}, found)
    return found


def write_files(project: Path) -> None:
    for label in (
        "python news/models.py", "python news/views.py", "python newsroom/urls.py", "html news/templates/news/article.html",
        "python news/forms.py", "python news/tests.py", "json news/fixtures/articles.json",
    ):  # fmt: skip
        path = project / label.split(" ", 1)[1]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(doc_block(label))


def _code(python: str) -> str:
    """Python source without its layout: whitespace, quote style and trailing commas."""
    flat = "".join(python.replace('"', "'").split())
    return flat.replace(",)", ")").replace(",]", "]")


def leftovers(url: str) -> list[tuple[str, str]]:
    """(kind, name) of every table, column, index, trigger and function of simsql's or news' in the database."""
    mysql = make_url(url).get_backend_name() in ("mysql", "mariadb")
    where = "table_schema = DATABASE()" if mysql else "table_schema = current_schema()"
    like = "(LOWER({0}) LIKE '%simsql%' OR LOWER({0}) LIKE '%simhash%' OR LOWER({0}) LIKE 'news%')"
    queries = [
        f"SELECT 'table', table_name FROM information_schema.tables WHERE {where} AND {like.format('table_name')}",
        f"SELECT 'column', column_name FROM information_schema.columns WHERE {where} AND {like.format('column_name')}",
        f"SELECT 'trigger', trigger_name FROM information_schema.triggers WHERE {where.replace('table_schema', 'trigger_schema')}",
        f"SELECT 'routine', routine_name FROM information_schema.routines WHERE {where.replace('table_schema', 'routine_schema')} AND {like.format('routine_name')}",
        "SELECT 'index', index_name FROM information_schema.statistics WHERE table_schema = DATABASE() AND " + like.format("index_name")
        if mysql else "SELECT 'index', indexname FROM pg_indexes WHERE schemaname = current_schema() AND " + like.format("indexname"),
    ]  # fmt: skip
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return sorted((str(kind), str(name)) for query in queries for kind, name in connection.execute(text(query)).all())
    finally:
        engine.dispose()


def test_the_documented_project_end_to_end(server: tuple[str, str], tmp_path: Path) -> None:
    _, url = server
    project = tmp_path / "site"
    project.mkdir()
    new_project, migrations = (commands(block) for block in blocks("sh django", DOC))
    for command in new_project:
        run(command, project)
    configure(project, url)
    write_files(project)
    for command in migrations:
        run(command, project)
    [written] = (project / "news" / "migrations").glob("0002_*.py")
    assert _code(doc_block("python migration").split("class Migration")[1]) in _code(written.read_text())
    attached = leftovers(url)
    assert ("trigger", "simsql_news_article_blocks" if "postgresql" in url else "simsql_news_article_blocks_ins") in attached
    (project / "trial.py").write_text(f"ARTICLES = {ARTICLES!r}\nQUERIES = {doc_block('python queries')!r}\n{TRIAL}")
    trial = json.loads(run("python manage.py shell < trial.py", project).strip().splitlines()[-1])
    assert trial["status"] == 200 and trial["related"][0] == "Rail strike: more lines", trial
    assert all(title in trial["page"] for title in trial["related"]) and len(trial["related"]) == 4
    assert not trial["copy_valid"] and f"copies article #{trial['harvest']}" in trial["copy_errors"][0], trial
    assert trial["fresh_valid"] and trial["edit_valid"], trial
    assert sorted(trial["rail"]) == ["Rail strike on Monday", "Rail strike: more lines"], trial
    ranked = trial["ranked"]  # NULL never ranks: the wordless row comes last, on both servers
    assert ranked[:-1] == sorted(ranked[:-1]) and None not in ranked[:-1] and ranked[-1] is None, trial
    for command in commands(doc_block("sh django tests")):
        tested = run(command, project)
    assert "Found 2 test(s)" in tested, tested  # and passed: run() checks the exit status
    status = run("python manage.py simsql status", project)
    assert status == run(f"simsql status --url '{url}'", project) and "news_article" in status
    assert status.split("\n")[1].split()[5:10] == ["5", "5", "0", "0", "0"], status
    run("python manage.py migrate news zero", project)
    assert leftovers(url) == []
