"""The lists a text query probes are chosen when the statement is sent (issue 41, "cheaper fixed
parts"): from the live generations read on the statement's own connection and their centres
cached in the process, sent as bound parameters, so the server plans neither the choice over the
centres nor the generations' bounds. On PostgreSQL and MySQL/MariaDB:

- the statement sent reads no centre and no generation (``simsql_partition_centres``,
  ``simsql_partitions``), and its lists are the ``probes`` nearest by brute force over the
  stored centres (``recall=``: as many as the fit's stored curve says);
- a refit, or a drop and a new fit, by another engine is seen by the next query of an engine
  that cached the centres before: its lists are the new generation's, its answer brute force's
  over the new state (a generation's number may come back with other centres after a drop);
- the answer is the brute force of tests/test_lists.py (the rows of the chosen lists and every
  row left behind).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, event, select, text
from sqlalchemy.orm import Session

import simsql
from simsql.bits import hamming
from simsql.lists import drop_lists, fit_lists
from simsql.schema.names import CENTRES_TABLE, PARTITIONS_TABLE
from simsql.text.lists import LIST_SPAN

from .test_lists import Note, answer, centres, corpus, expected_text, fingerprint_of, load, lists_never_step_aside, probed

__all__ = ["lists_never_step_aside"]  # the fixture (autouse): the lists never step aside here

TARGETS = ("vacuum replication snapshot", "trigger2 function2 sequence2 the of and")


class Sent:
    """The ranking statements an engine sends: their SQL and the lists bound to them."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.statements: list[tuple[str, Any]] = []

    def __enter__(self) -> Sent:
        event.listen(self.engine, "before_cursor_execute", self._seen)
        return self

    def __exit__(self, *exc: object) -> None:
        event.remove(self.engine, "before_cursor_execute", self._seen)

    def _seen(self, conn: Any, cursor: Any, sql: str, parameters: Any, context: Any, executemany: bool) -> None:
        if "simsql_ranked" in sql:
            bound = context.compiled_parameters[0]
            lists = [bound[f"simsql_lists_{i}"] for i in range(1, 1 + sum(k.startswith("simsql_lists_") for k in bound))]
            self.statements.append((sql, lists if CENTRES_TABLE not in sql else None))  # None: chosen by the statement


def _probed_by(engine: Engine, target: str, **how: Any) -> tuple[str, list[int] | None, list[tuple[int, int]]]:
    """The SQL and bound lists of ``most_similar(select(Note), target, limit=5, **how)`` as sent
    by ``engine``, and its answer."""
    with Sent(engine) as sent:
        found = answer(engine, simsql.most_similar(select(Note), target, limit=5, **how))
    ((sql, lists),) = sent.statements
    return sql, lists, found


def _brute_lists(engine: Engine, target: str, probes: int) -> set[int]:
    fingerprint = fingerprint_of(target)
    return probed(centres(engine, Note.__tablename__), lambda centre: hamming(fingerprint, centre), probes)


@pytest.fixture
def other_engine(any_engine: Engine, request: pytest.FixtureRequest) -> Iterator[Engine]:
    """A second engine on ``any_engine``'s database and schema (another process's pool)."""
    if any_engine.dialect.name == "postgresql":
        schema = request.getfixturevalue("schema")
        other = create_engine(any_engine.url, connect_args={"options": f"-csearch_path={schema},public"})
    else:
        other = create_engine(any_engine.url)
    yield other
    other.dispose()


def test_the_statement_sent_carries_the_lists_chosen_by_brute_force(any_engine: Engine) -> None:
    load(any_engine, Note, corpus(1200))
    fit_lists(any_engine, Note.__tablename__, lists=12, seed=3)
    for target in TARGETS:
        sql, lists, found = _probed_by(any_engine, target, probes=3)
        assert CENTRES_TABLE not in sql and PARTITIONS_TABLE not in sql, sql
        assert lists is not None and set(lists) == _brute_lists(any_engine, target, 3)
        assert found == expected_text(any_engine, fingerprint_of(target), 3, 5)
    wanted = _stored_probes_at(any_engine, 80)
    sql, lists, found = _probed_by(any_engine, TARGETS[0], recall=0.8)
    assert lists is not None and set(lists) == _brute_lists(any_engine, TARGETS[0], wanted)
    assert found == expected_text(any_engine, fingerprint_of(TARGETS[0]), wanted, 5)


def test_a_refit_or_a_new_fit_by_another_engine_is_seen_by_the_next_query(any_engine: Engine, other_engine: Engine) -> None:
    load(any_engine, Note, corpus(1200))
    first = fit_lists(any_engine, Note.__tablename__, lists=12, seed=3)
    target = TARGETS[0]
    _, lists, _ = _probed_by(any_engine, target, probes=2)  # the first generation's centres, now cached
    assert lists is not None and all(first.generation * LIST_SPAN <= v < (first.generation + 1) * LIST_SPAN for v in lists)

    refit = fit_lists(other_engine, Note.__tablename__, lists=7, seed=5)
    assert refit.generation != first.generation
    _, lists, found = _probed_by(any_engine, target, probes=2)
    assert lists is not None and set(lists) == _brute_lists(any_engine, target, 2)
    assert all(refit.generation * LIST_SPAN <= v < (refit.generation + 1) * LIST_SPAN for v in lists)
    assert found == expected_text(any_engine, fingerprint_of(target), 2, 5)

    # dropped and fitted again by the other engine: the new centres, whatever the generation's number
    assert drop_lists(other_engine, Note.__tablename__) is True
    again = fit_lists(other_engine, Note.__tablename__, lists=9, seed=11)
    for _ in range(2):  # the second query reads the centres from the cache
        _, lists, found = _probed_by(any_engine, target, probes=2)
        assert lists is not None and set(lists) == _brute_lists(any_engine, target, 2)
        assert all(again.generation * LIST_SPAN <= v < (again.generation + 1) * LIST_SPAN for v in lists)
        assert found == expected_text(any_engine, fingerprint_of(target), 2, 5)


def _stored_probes_at(engine: Engine, percent: int) -> int:
    with engine.connect() as connection:
        settings = connection.execute(
            text(f"SELECT settings FROM {PARTITIONS_TABLE} WHERE table_name = :t"), {"t": Note.__tablename__}
        ).scalar_one()
    return int((settings if isinstance(settings, dict) else json.loads(settings))["recall"]["probes_at"][percent])


def test_the_lists_are_chosen_in_the_callers_transaction(any_engine: Engine, other_engine: Engine) -> None:
    """The generations are read on the session's connection, inside its transaction: a curve the
    session changed and has not committed is what its ``recall=`` query follows; no other
    connection sees it."""
    load(any_engine, Note, corpus(600))
    fit_lists(any_engine, Note.__tablename__, lists=6, seed=3)
    stored = _stored_probes_at(any_engine, 80)
    changed = 1 if stored != 1 else 2
    if any_engine.dialect.name == "postgresql":
        edit = f"UPDATE {PARTITIONS_TABLE} SET settings = jsonb_set(settings, '{{recall,probes_at,80}}', '{changed}') WHERE table_name = :t"
    else:
        edit = f"UPDATE {PARTITIONS_TABLE} SET settings = JSON_SET(settings, '$.recall.probes_at[80]', {changed}) WHERE table_name = :t"
    with Session(any_engine) as session, Sent(any_engine) as sent:
        session.connection().execute(text(edit), {"t": Note.__tablename__})
        rows = session.execute(simsql.most_similar(select(Note), TARGETS[0], limit=5, recall=0.8)).all()
        session.rollback()
    ((_, lists),) = sent.statements
    assert lists is not None and len(lists) == changed and len(rows) == 5
    _, lists, _ = _probed_by(other_engine, TARGETS[0], recall=0.8)
    assert lists is not None and len(lists) == stored


def test_the_fit_measures_its_curve_on_a_thousand_held_out_rows(any_engine: Engine) -> None:
    """The margin a recall asked keeps (one-sided 95% over the held-out rows) shrinks with their
    number: 1,000 rows where the table has them (BENCHMARKS.md, issue 41, "The lists chosen in
    Python"); every row of a smaller table."""
    load(any_engine, Note, corpus(1800))
    fitted = fit_lists(any_engine, Note.__tablename__, lists=12, seed=3)
    assert fitted.recall is not None and fitted.recall.queries == 1000
    with any_engine.connect() as connection:
        stored = connection.execute(text(f"SELECT settings FROM {PARTITIONS_TABLE} WHERE table_name = :t"), {"t": Note.__tablename__}).scalar_one()
    assert (stored if isinstance(stored, dict) else json.loads(stored))["recall"]["queries"] == 1000
