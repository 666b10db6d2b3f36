"""What the server does with a list query (issue 41, "where a list row's time goes"): read from
PostgreSQL's own ``EXPLAIN (ANALYZE, FORMAT JSON)`` of the statement ``most_similar(...,
probes=...)`` sends, on a fitted table.

- the probed lists' rows are ranked where they are read: what the union above the branches (the
  probed lists, the rows left behind) passes on is at most ``limit`` rows a branch, not every row
  of the probed lists;
- the probed lists are read by one scan of the list index (``= ANY`` of the chosen lists), not
  one scan per list under a join;
- after a fit those scans never visit the heap (the fit leaves the visibility map set).

Answers are checked against brute force in tests/test_lists.py; these tests check the plan.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, event, select
from sqlalchemy.orm import Session

import simsql
from simsql.lists import fit_lists
from simsql.schema.names import Names

from .test_lists import Note, answer, corpus, expected_text, fingerprint_of, load, lists_never_step_aside, stored_text

__all__ = ["lists_never_step_aside"]  # the fixture (autouse): the lists never step aside here

LIMIT = 5


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


def explained(engine: Engine, statement: Any) -> dict[str, Any]:
    """The root plan node of ``statement``'s ranking query, as the server ran it."""
    plans: list[str] = []

    def explain(conn: Any, cursor: Any, sql: str, parameters: Any, context: Any, executemany: bool) -> tuple[str, Any]:
        if "simsql_ranked" in sql:
            return "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, parameters
        return sql, parameters

    event.listen(engine, "before_cursor_execute", explain, retval=True)
    try:
        with Session(engine) as session:
            plans.append(session.connection().execute(statement).scalar_one())
    finally:
        event.remove(engine, "before_cursor_execute", explain)
    found = plans[0]
    return (json.loads(found) if isinstance(found, str) else found)[0]["Plan"]  # type: ignore[no-any-return]


@pytest.fixture
def fitted(engine: Engine) -> Engine:
    load(engine, Note, corpus(1800))
    fit_lists(engine, Note.__tablename__, lists=16, seed=3)
    return engine


def _list_scans(root: dict[str, Any]) -> list[dict[str, Any]]:
    index = Names(Note.__tablename__).part_index
    return [n for n in _nodes(root) if n.get("Index Name") == index]


def test_the_probed_rows_are_ranked_before_the_union(fitted: Engine) -> None:
    target = "trigger2 function2 sequence2 the of and"
    statement = simsql.most_similar(select(Note), target, limit=LIMIT, probes=4)
    root = explained(fitted, statement)
    unions = [n for n in _nodes(root) if n["Node Type"] in ("Append", "Merge Append")]
    assert unions, json.dumps(root)[:2000]
    read = sum(n["Actual Rows"] * n["Actual Loops"] for n in _list_scans(root))
    assert read > 10 * LIMIT  # the probed lists hold many more rows than the answer
    for union in unions:
        assert union["Actual Rows"] <= LIMIT * len(union["Plans"]), (union["Actual Rows"], read)
    assert answer(fitted, statement) == expected_text(stored_text(fitted), fingerprint_of(target), 4, LIMIT)


def test_the_probed_lists_are_read_by_one_scan_of_the_list_index(fitted: Engine) -> None:
    root = explained(fitted, simsql.most_similar(select(Note), "vacuum replication snapshot", limit=LIMIT, probes=6))
    scans = _list_scans(root)
    probed = max(scans, key=lambda n: n["Actual Rows"] * n["Actual Loops"])
    assert probed["Node Type"] == "Index Only Scan"
    assert probed["Actual Loops"] == 1, "one index scan for all the probed lists, not one a list"


def test_after_a_fit_the_list_scans_never_visit_the_heap(fitted: Engine) -> None:
    root = explained(fitted, simsql.most_similar(select(Note), "vacuum replication snapshot", limit=LIMIT, probes=6))
    scans = _list_scans(root)
    assert scans and all(n["Node Type"] == "Index Only Scan" for n in scans)
    assert [n["Heap Fetches"] for n in scans] == [0] * len(scans)
