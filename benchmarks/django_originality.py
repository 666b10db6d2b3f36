"""``find_original`` through Django against the SQLAlchemy call, side by side (issue 40).

    python -m benchmarks.django_originality --rows 1000000 --workers 2        # PostgreSQL (127.0.0.1:5432)
    python -m benchmarks.django_originality --rows 1000000 --reuse            # the timing again, on the kept table
    python -m benchmarks.django_originality --rows 100000 --url mysql+pymysql://root@127.0.0.1:3306/test

The table is :mod:`benchmarks.originality`'s (``Doc``, a ``WideSimHashMixin`` table of real man
pages and articles assembled from their paragraphs), built the same way in a schema (MySQL: a
database) of its own, ``bench_django``. A Django project configured in this process puts a model
on it (``managed = False``), served on Django's own connection with the driver Django picks
(psycopg 3; mysqlclient, else PyMySQL installed as ``MySQLdb``). Each submission (a stored
original with 2% of its words substituted, or a fresh article the table never saw) is checked
by both, taking turns text by text, each first on every other text:

* ``django``: ``DjangoDoc.objects.find_original(text)``: simsql's function on a ``Session`` over
  Django's connection, in an atomic block of its own, the match read back as a model instance;
* ``sqlalchemy``: ``simsql.find_original(session, Doc, text)`` on an engine of its own (a pooled
  connection, a ``Session`` per check);
* ``django_in_atomic``: the Django call inside an open ``transaction.atomic()`` (a ``TestCase``,
  ``ATOMIC_REQUESTS``), which adds no transaction of its own.

The answers must agree (the same row, the same distance). p50/p99 of each, and the ratio of the
p50s, go to ``benchmarks/results/django-originality-<server>-<rows>.json`` and are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine, make_url
from sqlalchemy.orm import Session

import simsql

from .edits import substitute_words
from .originality import Doc, build, corpus, engine_for, engine_schema
from .timing import summary

SCHEMA = "bench_django"
RESULTS = Path(__file__).resolve().parent / "results"


def django_settings(engine: Engine) -> dict[str, Any]:
    """Django's ``DATABASES["default"]`` on the benchmark's table (its schema on PostgreSQL)."""
    url = engine.url
    mysql = url.get_backend_name() in ("mysql", "mariadb")
    options: dict[str, Any] = {"charset": "utf8mb4"} if mysql else {"options": f"-c search_path={engine_schema(engine)}"}
    return {
        "ENGINE": "django.db.backends.mysql" if mysql else "django.db.backends.postgresql",
        "NAME": url.database, "USER": url.username or "", "PASSWORD": url.password or "",
        "HOST": url.host or "", "PORT": str(url.port or ""), "OPTIONS": options,
    }  # fmt: skip


def django_model(engine: Engine) -> type:
    """Configure Django on the benchmark's database; the model of ``Doc``'s table."""
    if make_url(engine.url).get_backend_name() != "postgresql":
        try:
            import MySQLdb  # noqa: F401  mysqlclient, Django's recommended driver
        except ImportError:
            import pymysql

            pymysql.install_as_MySQLdb()
    import django
    from django.conf import settings
    from django.db import models

    settings.configure(DATABASES={"default": django_settings(engine)}, INSTALLED_APPS=["simsql.django"], USE_TZ=True)
    django.setup()
    from simsql.django.models import WideSimHashModel

    class Meta:
        app_label = "simsql"
        managed = False
        db_table = Doc.__tablename__

    return type("DjangoDoc", (WideSimHashModel,), {
        "__module__": __name__, "Meta": Meta, "simhash_source": ("body",),
        "id": models.BigIntegerField(primary_key=True), "kind": models.CharField(max_length=12), "body": models.TextField(),
    })  # fmt: skip


def submissions(data: dict[str, Any], count: int, seed: int) -> list[str]:
    """``count`` texts: stored originals with 2% of their words substituted, and fresh articles, alternately."""
    rng = random.Random(seed)
    copies = [substitute_words(body, 0.02, rng) for body in rng.sample(data["originals"], min(count, len(data["originals"])))]
    fresh = rng.sample(data["fresh_shared"], min(count, len(data["fresh_shared"])))
    return [text for pair in zip(copies, fresh) for text in pair][:count]


def side_by_side(engine: Engine, model: type, texts: Sequence[str]) -> dict[str, Any]:
    """Each text checked by every way in turn (each way first on some of the texts); their
    times, and the texts where the answers differ (none expected)."""
    from django.db import transaction

    def through_sqlalchemy(text: str) -> Any:
        with Session(engine) as session:
            match = simsql.find_original(session, Doc, text)
            return None if match is None else (match.row.id, match.distance)

    def through_django(text: str) -> Any:
        match = model.objects.find_original(text)
        return None if match is None else (match.row.pk, match.distance)

    def in_atomic(text: str) -> Any:
        with transaction.atomic():
            return through_django(text)

    ways: dict[str, Callable[[str], Any]] = {"sqlalchemy": through_sqlalchemy, "django": through_django, "django_in_atomic": in_atomic}
    names = list(ways)
    times: dict[str, list[float]] = {name: [] for name in ways}
    differ, matched = [], 0
    for turn, text in enumerate(texts):
        answers = {}
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            started = time.perf_counter()
            answers[name] = ways[name](text)
            times[name].append(time.perf_counter() - started)
        matched += answers["sqlalchemy"] is not None
        if len(set(answers.values())) != 1:
            differ.append({"turn": turn, **{name: answers[name] for name in names}})
    result: dict[str, Any] = {name: summary(values) for name, values in times.items()}
    result["ratio_p50"] = {name: result[name]["p50_ms"] / result["sqlalchemy"]["p50_ms"] for name in ("django", "django_in_atomic")}
    result.update(checks=len(texts), matched=matched, answers_differ=differ)
    return result


def run(url: str, rows: int, checks: int, seed: int, reuse: bool, workers: int, originals: int) -> dict[str, Any]:
    data = corpus(rows, originals, checks, seed)
    engine = engine_for(url, schema=SCHEMA)
    result: dict[str, Any] = {"server": engine.dialect.name, "rows": rows, "load_average_before": list(os.getloadavg())}
    result["build"] = build(engine, data, rows, seed, reuse, workers)
    model = django_model(engine)
    from django.db import connections

    texts = submissions(data, checks, seed)
    side_by_side(engine, model, texts[: max(4, len(texts) // 10)])  # warm: both ways' first statements, the server's caches
    result["side_by_side"] = side_by_side(engine, model, texts)
    result["driver"] = type(connections["default"].connection).__module__.split(".")[0]
    result["load_average_after"] = list(os.getloadavg())
    connections.close_all()
    engine.dispose()
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.django_originality", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--checks", type=int, default=400, help="submissions checked by each way (half copies, half fresh)")
    parser.add_argument("--originals", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, default=2, help="processes computing signatures while loading")
    parser.add_argument("--reuse", action="store_true", help="time again on the table a previous run kept")
    args = parser.parse_args(argv)
    result = run(args.url, args.rows, args.checks, args.seed, args.reuse, args.workers, args.originals)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"django-originality-{result['server']}-{args.rows}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    sys.stdout.write(json.dumps(result["side_by_side"], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
