"""Exact ``most_similar`` chooses its plan by the table's size (:mod:`simsql.queries.plan_size`):
a table estimated below ``BANDS_FROM_ROWS`` runs band 0 and the scan, a larger one the bands;
either way the answer is brute force's (issue 41: exact was 3.8x the keys-only scan at 20k rows,
the bands' fixed cost)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, event, select
from sqlalchemy.orm import Session

import simsql
from simsql.bits import hamming
from simsql.errors import ConfigMismatch
from simsql.lists import fit_lists
from simsql.queries import plan_size
from simsql.store import registry

from .test_lists import Note, corpus, fingerprint_of, load, rows_of


def sent_statements(engine: Engine, statement: Any) -> tuple[list[tuple[int, int]], list[str]]:
    seen: list[str] = []

    def record(conn: Any, cursor: Any, sql: str, *_: Any) -> None:
        seen.append(sql)

    event.listen(engine, "before_cursor_execute", record)
    try:
        with Session(engine) as session:
            found = [(row[0].id, int(row[1])) for row in session.execute(statement)]
    finally:
        event.remove(engine, "before_cursor_execute", record)
    return found, [sql for sql in seen if "part_notes" in sql and "simsql_registry" not in sql]


@pytest.mark.parametrize("large", [False, True])
def test_exact_plan_follows_the_table_size_and_answers_as_brute_force(any_engine: Engine, large: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = corpus(800)
    load(any_engine, Note, rows)
    monkeypatch.setattr(plan_size, "BANDS_FROM_ROWS", 0 if large else 10**9)
    stored = {key: fp for key, (fp, _) in rows_of(any_engine, Note).items() if fp is not None}
    for target in (rows[5]["body"], "trigger2 function2 sequence2 the of and"):
        fp = fingerprint_of(target)
        found, sent = sent_statements(any_engine, simsql.most_similar(select(Note), target, limit=10))
        expected = sorted((hamming(fp, v), k) for k, v in stored.items())[:10]
        assert found == [(k, d) for d, k in expected]
        banded = any("simsql_band_1" in sql for sql in sent)
        assert banded == (large and any_engine.dialect.name == "postgresql"), sent[-1][:200]


@pytest.mark.parametrize("options", [{}, {"probes": 7}])
def test_a_swapped_statement_still_checks_the_configuration(any_engine: Engine, options: dict[str, Any]) -> None:
    """The statement sent in place of the one built (a small table's, the lists' exact one)
    carries the configuration check: a table recorded under another configuration is refused."""
    load(any_engine, Note, corpus(300))
    fit_lists(any_engine, Note.__tablename__, lists=8)
    with any_engine.begin() as connection:
        connection.exec_driver_sql("UPDATE simsql_registry SET config_id = 'sh2-000000000000'")
    registry.forget(any_engine)
    with pytest.raises(ConfigMismatch, match="sh2-000000000000"), Session(any_engine) as session:
        session.execute(simsql.most_similar(select(Note), "lock1 snapshot1 isolation1", limit=10, **options)).all()
