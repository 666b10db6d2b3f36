"""The drivers Django users run, each on Django's own connection (issue 40): psycopg 3 and
psycopg2 on PostgreSQL, mysqlclient and PyMySQL (installed as ``MySQLdb``) on MySQL/MariaDB.

Django picks its driver when its backend is imported, once per process: each driver gets a
process of its own (a database of its own too), which migrates ``news``, runs the issue's first
example in a ``TestCase`` and reports which driver module Django's connection came from and
which SQLAlchemy dialect simsql compiled for, and counts the sessions open on its database
(one: Django's).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.test_django import _create, _drop

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r'''
import json, sys
driver, url, name = sys.argv[1:4]
if driver == "psycopg2":
    sys.modules["psycopg"] = None  # Django falls back to psycopg2, as where psycopg 3 is not installed
if driver == "pymysql":
    import pymysql
    pymysql.install_as_MySQLdb()
import django
from django.conf import settings
from tests.django_project.settings import database, settings as project_settings
settings.configure(**project_settings({"default": database(url, name)}))
django.setup()
import unittest
from django.core.management import call_command
from django.db import connections, transaction
from django.test import TestCase
from tests.django_project.news.models import Article
from tests.test_django_transaction import LONG, edited
from simsql.django.connection import engine_for

call_command("migrate", "news", verbosity=0)
found = {}

class InTransactionTests(TestCase):
    def test_copy_is_found(self):
        with transaction.atomic():
            article = Article.objects.create(title="Regional news", body=LONG)
            match = Article.objects.find_original(Article(title="Regional news", body=edited(LONG)))
            self.assertIsNotNone(match)
            found["match"] = match.row.pk == article.pk
            found["nearest"] = [a.pk for a in Article.objects.most_similar(LONG, limit=1)] == [article.pk]
            found["groups"] = Article.objects.duplicate_groups()

result = unittest.TestResult()
unittest.defaultTestLoader.loadTestsFromTestCase(InTransactionTests).run(result)
found["ok"] = result.wasSuccessful()
found["problems"] = [str(p[1]) for p in result.failures + result.errors]
outside = Article.objects.create(title="Outside", body=LONG)
found["outside"] = Article.objects.find_original(edited(LONG)).row.pk == outside.pk
with connections["default"].cursor() as cursor:
    if connections["default"].vendor == "postgresql":
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
    else:
        cursor.execute("SELECT count(*) FROM information_schema.processlist WHERE db = DATABASE()")
    found["connections"] = cursor.fetchone()[0]
found["module"] = type(connections["default"].connection).__module__.split(".")[0]
found["dialect"] = f"{engine_for('default').dialect.name}+{engine_for('default').dialect.driver}"
call_command("migrate", "news", "zero", verbosity=0)
connections.close_all()
print(json.dumps(found))
'''

DRIVERS = {
    "psycopg": ("postgresql", "psycopg", "postgresql+psycopg"),
    "psycopg2": ("postgresql", "psycopg2", "postgresql+psycopg2"),
    "mysqlclient": ("mysql", "MySQLdb", "mysql+mysqldb"),
    "pymysql": ("mysql", "pymysql", "mysql+pymysql"),
}


@pytest.fixture(params=sorted(DRIVERS))
def driver(request: pytest.FixtureRequest, database_url: str) -> Iterator[tuple[str, str, str]]:
    """(driver, SQLAlchemy URL of the server, name of a database of the test's own)."""
    pytest.importorskip("django")
    name = str(request.param)
    server, module, _ = DRIVERS[name]
    if name != "pymysql" and importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed here")
    url = database_url if server == "postgresql" else request.getfixturevalue("mysql_url")
    database = f"{make_url(url).database or 'simsql'}_drv_{name}"
    _create(url, database)
    yield name, url, database
    _drop(url, database)


def test_each_driver_runs_on_djangos_connection(driver: tuple[str, str, str]) -> None:
    name, url, database = driver
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT, name, url, database], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    _, module, dialect = DRIVERS[name]
    assert found["ok"], found["problems"]
    assert found["match"] and found["nearest"] and found["groups"] == [] and found["outside"]
    assert found["connections"] == 1  # Django's: simsql opened none, migrations included
    assert (found["module"], found["dialect"]) == (module, dialect)
