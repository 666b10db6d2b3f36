"""Partition lists without collateral (issue 41): a fit leaves every index of the table about as
small as it found it (PostgreSQL, where a rewritten row gets an entry in every index), the recall
curve it records is a brute-force measurement, ``most_similar(..., recall=r)`` probes what that
curve says (checked against brute force over the stored rows and centres), and ``simsql status``
shows the curve and says when the table has drifted from it."""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy import column as sa_column
from sqlalchemy import table as sa_table
from sqlalchemy.orm import Session

import simsql
from simsql.dialects import backend
from simsql.lifecycle.lists_status import lists_status
from simsql.lists import fit_lists
from simsql.queries import plan_size
from simsql.schema.names import Names
from simsql.store import registry
from simsql.text.lists import RecallCurve, nearest_modes, recall_curve, recall_percent

from .command_line import cli, ok
from .test_lists import ALL, Note, answer, corpus, expected_text, fingerprint_of, load, stored_text
from .test_lists_exact_size import sent_statements


def index_sizes(engine: Engine, table: str) -> dict[str, int]:
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            rows = connection.execute(
                text("SELECT indexrelname, pg_relation_size(indexrelid) FROM pg_stat_user_indexes WHERE relname = :t"), {"t": table}
            )
        else:
            connection.exec_driver_sql(f"ANALYZE TABLE {table}")
            rows = connection.execute(
                text("SELECT index_name, stat_value * @@innodb_page_size FROM mysql.innodb_index_stats "
                     "WHERE database_name = DATABASE() AND table_name = :t AND stat_name = 'size'"), {"t": table},
            )  # fmt: skip
        return {str(name): int(size) for name, size in rows}


def grown_indexes(engine: Engine, before: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Indexes now larger than 1.15 times their size in ``before`` (and a page), with both sizes."""
    after = index_sizes(engine, Note.__tablename__)
    return {name: (before[name], size) for name, size in after.items() if size > 1.15 * before[name] + 16384}


def test_a_fit_and_a_refit_leave_every_index_as_small_as_they_found_it(any_engine: Engine) -> None:
    engine = any_engine
    load(engine, Note, corpus(6000))
    before = index_sizes(engine, Note.__tablename__)
    assert max(before.values()) >= 1 << 16  # large enough that a doubled index would show
    first = fit_lists(engine, Note.__tablename__, lists=16)
    refit = fit_lists(engine, Note.__tablename__, lists=12)
    part_index = Names(Note.__tablename__).part_index
    if engine.dialect.name == "postgresql":  # the list index as a fresh build of it would be
        after = index_sizes(engine, Note.__tablename__)
        with engine.begin() as connection:
            connection.exec_driver_sql(f"REINDEX INDEX {part_index}")
        before[part_index] = index_sizes(engine, Note.__tablename__)[part_index]
        grown = {name: (before[name], size) for name, size in after.items() if size > 1.15 * before[name] + 16384}
    else:  # a twin built now, beside it, while the list index is measured until purge has run
        with engine.begin() as connection:
            connection.exec_driver_sql(f"ALTER TABLE {Note.__tablename__} ADD INDEX fresh_twin (simhash_part, simhash)")
        before[part_index] = index_sizes(engine, Note.__tablename__).pop("fresh_twin")
        with engine.begin() as connection:
            connection.exec_driver_sql(f"ALTER TABLE {Note.__tablename__} DROP INDEX fresh_twin")
        grown = grown_indexes(engine, before)
    deadline = time.monotonic() + 60
    while grown and engine.dialect.name != "postgresql" and time.monotonic() < deadline:
        # InnoDB: an UPDATE of the list column delete-marks the row's old entry in the list index,
        # and purge, a background job, removes it once no reader needs it (seconds on a loaded
        # machine, while the index holds both); the size the table keeps is the one after it
        time.sleep(1)
        grown = grown_indexes(engine, before)
    assert not grown, f"indexes grown by the fits: {grown} (rebuilt: {first.rebuilt}, {refit.rebuilt})"
    assert refit.left_behind == 0


def _brute_curve(rows: np.ndarray, queries: np.ndarray, centres: np.ndarray, probes: int) -> float:
    """Recall@10 of probing ``probes`` lists for each query row, by ranking every row: the 10
    nearest of the probed lists' rows, counted within the true 10th distance."""
    lists, _ = nearest_modes(rows, centres)
    found = []
    for q in queries:
        d = np.array([bin(int(r) ^ int(rows[q])).count("1") for r in rows])
        d[q] = 1000
        tenth = np.sort(d)[9]
        order = sorted(range(len(centres)), key=lambda i: (bin(int(centres[i]) ^ int(rows[q])).count("1"), i))[:probes]
        candidates = np.sort(d[np.isin(lists, order)])[:10]
        found.append(float(np.sum(candidates <= tenth)) / 10)
    return float(np.mean(found))


def test_the_recall_curve_is_the_brute_force_recall() -> None:
    rng = np.random.default_rng(4)
    middles = rng.integers(0, 2**63, 6, dtype=np.int64).astype(np.uint64)
    noise = np.zeros(600, dtype=np.uint64)
    for bit in range(64):
        noise |= (rng.random(600) < 0.12).astype(np.uint64) << np.uint64(bit)
    rows = middles[rng.integers(0, 6, 600)] ^ noise
    centres = rows[[0, 100, 200, 300, 400, 500, 50, 150]]
    queries = np.arange(0, 600, 20)
    curve = recall_curve(rows, queries, centres)
    for probes, recall in zip(curve.grid, curve.recall):
        assert recall == pytest.approx(_brute_curve(rows, queries, centres, probes), abs=1e-4)
    assert curve.grid[-1] == 8 and curve.recall[-1] == 1.0
    assert list(curve.recall) == sorted(curve.recall)
    assert all(curve.probes_at[p] <= curve.probes_at[p + 1] for p in range(100))


def test_recall_picks_the_probes_the_curve_says_and_answers_as_brute_force(any_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_size, "STEP_ASIDE_ROWS", 0)  # the share rule alone (the size rule: below)
    rows = corpus(1500)
    load(any_engine, Note, rows)
    fitted = fit_lists(any_engine, Note.__tablename__, lists=12)
    assert fitted.recall is not None and fitted.recall.k == 10 and fitted.recall.rows == sum(r["body"] is not None for r in rows)
    state = stored_text(any_engine)
    for wanted in (0.5, 0.9, 0.95, 1.0):
        probes = fitted.recall.probes_at[recall_percent(wanted)]
        if probes >= plan_size.STEP_ASIDE_SHARE * 12:  # most lists: the exact plan instead
            probes = ALL
        for target in (rows[10]["body"], "trigger2 function2 sequence2 the of and"):
            fp = fingerprint_of(target)
            got = answer(any_engine, simsql.most_similar(select(Note), target, limit=10, recall=wanted))
            assert got == expected_text(state, fp, probes, 10)


@pytest.mark.parametrize("small", [False, True])
def test_probes_of_most_lists_step_aside_for_the_exact_plan(any_engine: Engine, small: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """3/4 of the lists or more run the exact plan; on a table of ``rows`` rows, from ``1 -
    STEP_ASIDE_ROWS / rows`` (here 1 - 450/900: half the lists)."""
    monkeypatch.setattr(plan_size, "STEP_ASIDE_ROWS", 450 if small else 0)
    rows = corpus(900)
    load(any_engine, Note, rows)
    fit_lists(any_engine, Note.__tablename__, lists=8)
    with any_engine.begin() as connection:  # the row estimate the rule reads
        connection.exec_driver_sql(f"ANALYZE {'TABLE ' if any_engine.dialect.name != 'postgresql' else ''}{Note.__tablename__}")
    state = stored_text(any_engine)
    cases = ((3, False), (4, True), (8, True)) if small else ((5, False), (6, True), (8, True))
    for probes, aside in cases:
        for target in (rows[7]["body"], "lock1 snapshot1 isolation1"):
            got, sent = sent_statements(any_engine, simsql.most_similar(select(Note), target, limit=10, probes=probes))
            assert got == expected_text(state, fingerprint_of(target), ALL if aside else probes, 10)
            assert any("simsql_listed" in sql for sql in sent) != aside


@pytest.mark.parametrize(
    ("recall", "error"), [(0, ValueError), (1.01, ValueError), (-0.5, ValueError), ("0.9", TypeError), (True, TypeError)]
)
def test_a_recall_outside_0_to_1_is_refused_naming_it(recall: Any, error: type) -> None:
    with pytest.raises(error, match="recall"):
        simsql.most_similar(select(Note), 5, recall=recall)


def test_probes_and_recall_together_are_refused() -> None:
    with pytest.raises(ValueError, match="probes or recall"):
        simsql.most_similar(select(Note), 5, probes=4, recall=0.9)


def test_status_shows_the_curve_and_says_when_the_table_drifted(any_engine: Engine) -> None:
    rows = corpus(600)
    load(any_engine, Note, rows)
    fit_lists(any_engine, Note.__tablename__, lists=6)
    with any_engine.connect() as connection:
        entry = registry.read(connection, Note.__tablename__, registry.current_schema(connection))
        assert entry is not None
        status = lists_status(connection, entry)
    assert status is not None and isinstance(status.recall, RecallCurve) and status.drift is None
    more = [{**row, "id": row["id"] + 10_000} for row in corpus(300, seed=11)]
    with Session(any_engine) as session:  # raw-ish: rows written through Core, no list
        session.execute(Note.__table__.insert(), [_stored(row) for row in more])
        session.commit()
    with any_engine.connect() as connection:
        drifted = lists_status(connection, entry)
    assert drifted is not None and drifted.drift is not None and "refit" in drifted.drift


def _stored(row: dict[str, Any]) -> dict[str, Any]:
    from .test_lists import stored

    return stored(Note, row)





def test_what_a_stopped_rebuild_left_is_dropped_by_the_next_fit(engine: Engine) -> None:
    """``REINDEX ... CONCURRENTLY`` killed midway leaves an invalid ``<index>_ccnew`` copy that
    every insert would keep writing; the next fit drops it (made here as PostgreSQL leaves it)."""
    load(engine, Note, corpus(400))
    with engine.begin() as connection:
        connection.exec_driver_sql("CREATE INDEX ix_part_notes_simhash_b0_ccnew ON part_notes (simhash_b0)")
        connection.exec_driver_sql(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'ix_part_notes_simhash_b0_ccnew'::regclass"
        )
    fit_lists(engine, Note.__tablename__, lists=4)
    with engine.connect() as connection:
        left = connection.exec_driver_sql("SELECT count(*) FROM pg_class WHERE relname = 'ix_part_notes_simhash_b0_ccnew'").scalar()
    assert left == 0


def test_the_command_line_prints_the_curve_and_status_shows_it(any_engine: Engine, any_url: str) -> None:
    load(any_engine, Note, corpus(500))
    fitted = ok(cli("lists", "fit", "--table", Note.__tablename__, "--lists", "5", url=any_url))  # 490 rows fingerprinted: all held out
    assert "recall@10 by probes (490 held-out rows): 1: " in fitted.stdout and "5: 1.000" in fitted.stdout, fitted.stdout
    status = json.loads(ok(cli("status", "--format", "json", url=any_url)).stdout)
    mine = next(s for s in status if s["table"].endswith(Note.__tablename__))
    assert mine["recall@10"].endswith("5:1.00") and mine["drift"] == ""


def test_placing_rows_in_lists_changes_nothing_but_the_list(engine: Engine) -> None:
    """A fit's writes set the list and nothing else, so the row trigger, which hashes each row's
    text to check the fingerprint's digest, is not asked to check what did not change (hashing
    every article of the table was the larger part of a fit's writes). A row whose digest no
    longer matches its text (written with the trigger off: ``simsql status`` counts it stale)
    keeps its fingerprint; the trigger still checks a write of the text in the same session."""
    load(engine, Note, corpus(60))
    names = Names(Note.__tablename__)
    table_name = Note.__tablename__
    with engine.begin() as connection:
        read = connection.execute(text(f"SELECT id, {names.fingerprint} FROM {table_name} WHERE {names.fingerprint} IS NOT NULL ORDER BY id")).all()
        stale, edited = read[0][0], read[1][0]
        connection.exec_driver_sql("SET LOCAL session_replication_role = replica")
        connection.execute(text(f"UPDATE {table_name} SET body = 'text written with the trigger off' WHERE id = :k"), {"k": stale})
    with engine.begin() as connection:
        relation = sa_table(table_name, sa_column("id"), schema=connection.exec_driver_sql("SELECT current_schema()").scalar())
        written = backend(connection).lists_ddl.write_lists(connection, relation, ("id",), names.fingerprint, names.part, [(*r, 7) for r in read])
        connection.execute(text(f"UPDATE {table_name} SET body = body || ' more' WHERE id = :k"), {"k": edited})
    with engine.connect() as connection:
        after = dict(connection.execute(text(f"SELECT id, {names.fingerprint} FROM {table_name} WHERE {names.part} = 7")).all())
    assert written == len(read)
    assert after[stale] == read[0][1], "the fit's write of the list dropped the fingerprint of a stale row"
    assert after[edited] is None, "a write of the text in the same session kept a fingerprint of the old text"
