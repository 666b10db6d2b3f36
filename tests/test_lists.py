"""Partition lists (issue 34) on every server: ``fit_lists`` places each row in the list of
its nearest centre, ``most_similar(..., probes=N)`` and ``most_similar_vectors(..., probes=N)``
give exactly what brute force over the stored rows and centres gives (the rows of the ``N``
nearest lists of each live generation and every row left behind), ORM writes place rows, raw
writes are left behind yet never lost, refits and stopped fits lose no row, bad input is refused
with nothing written, and ``drop_lists`` removes what the fit added.

The brute force reads the centres back from ``simsql_partition_centres`` and ranks in Python;
it shares no code with the library beyond the fingerprinter."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest
from sqlalchemy import JSON, Double, Engine, Integer, String, Text, insert, select, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import simsql
from simsql import VectorFingerprinter
from simsql.bits import hamming
from simsql.errors import NotAttached, SchemaError, WouldLockTable
from simsql.lifecycle import lists_place
from simsql.lists import ListsMixin, drop_lists, fit_lists, place_lists
from simsql.queries import plan_size
from simsql.schema.names import Names
from simsql.store.lists import decode_centre
from simsql.store.storage import binding_for
from simsql.text.lists import LIST_SPAN

from .command_line import environment
from .models import Article, Post
from .models import Base as SharedBase
from .tables import WORDS, is_mysql, run

MASK = (1 << 64) - 1
ALL = 10_000
"""As many probes as any test has lists, and as many rows as any test has: "every list", "every row"."""


class Base(DeclarativeBase):
    pass


class Note(ListsMixin, simsql.SimHashMixin, Base):
    """A text model with partition lists."""

    __tablename__ = "part_notes"
    __simhash_source__ = ("title", "body")

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    title: Mapped[str | None] = mapped_column(String(200))
    body: Mapped[str | None] = mapped_column(Text)
    topic: Mapped[int] = mapped_column(Integer, default=0)


DIMENSIONS = 24
SIGNER = VectorFingerprinter(DIMENSIONS, seed=5)
VECTOR = ARRAY(Double()).with_variant(JSON(), "mysql", "mariadb")


class WideVec(ListsMixin, simsql.WideSimHashMixin, Base):
    """A vector model with the 256-bit signature and partition lists."""

    __tablename__ = "part_wide_vecs"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(VECTOR, nullable=True)


class NarrowVec(ListsMixin, simsql.SimHashMixin, Base):
    """The same with the 64-bit signature only."""

    __tablename__ = "part_narrow_vecs"
    __simhash_source__ = "embedding"
    __simhash_fingerprinter__ = SIGNER

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    embedding: Mapped[Any] = mapped_column(VECTOR, nullable=True)


# -- a corpus: sentences on eight topics, near-duplicates planted, some rows without text ------

TOPICS = 8
COMMON = "the a of and to in is that for on with as by it this from at be are".split()


def _sentence(rng: random.Random, topic: int) -> str:
    pool = [f"{word}{topic}" for word in WORDS]
    words = []
    for _ in range(28):
        roll = rng.random()
        words.append(rng.choice(pool) if roll < 0.55 else rng.choice(COMMON) if roll < 0.85 else f"w{rng.randrange(20_000)}")
    return " ".join(words)


def corpus(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` rows (id, title, body, topic): every 9th a near-duplicate of an earlier row (two
    words changed), every 47th without any text (no fingerprint)."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for i in range(1, n + 1):
        topic = rng.randrange(TOPICS)
        if i % 47 == 0:
            rows.append({"id": i, "title": None, "body": None, "topic": topic})
            continue
        body = _sentence(rng, topic)
        if i % 9 == 0 and rows:
            source = rng.choice([r for r in rows if r["body"] is not None])
            words = source["body"].split()
            for _ in range(2):
                words[rng.randrange(len(words))] = f"edit{rng.randrange(1000)}"
            body, topic = " ".join(words), source["topic"]
        rows.append({"id": i, "title": f"note {topic}", "body": body, "topic": topic})
    return rows


def stored(model: type, row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with what the ORM would write for it (fingerprint, digest, words), no list."""
    return {**row, **binding_for(model).stored_row(model(**row))}


def load(engine: Engine, model: type, rows: list[dict[str, Any]]) -> None:
    """The model's table, and ``rows`` written with Core as a bulk loader (or the ORM without its
    list) would: fingerprinted, no list (NULL)."""
    Base.metadata.create_all(engine, tables=[model.__table__])  # type: ignore[attr-defined]
    with engine.begin() as connection:
        values = [stored(model, row) for row in rows]
        for start in range(0, len(values), 1000):
            connection.execute(insert(model.__table__), values[start : start + 1000])  # type: ignore[attr-defined]


# -- what the database holds, read back -------------------------------------------------------


def rows_of(engine: Engine, model: type) -> dict[int, tuple[int | None, int | None]]:
    """``{id: (fingerprint (unsigned), list)}`` of every row."""
    m: Any = model
    with Session(engine) as session:
        return {r[0]: (r[1], r[2]) for r in session.execute(select(m.id, m.simhash, m.simhash_part))}


def generations(engine: Engine, table: str) -> list[tuple[int, str, int]]:
    """``(generation, state, lists)`` of every recorded generation of ``table``."""
    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT generation, state, lists FROM simsql_partitions WHERE table_name = :t ORDER BY generation"), {"t": table}
        )
        return [(int(r[0]), str(r[1]), int(r[2])) for r in rows]


def centres(engine: Engine, table: str) -> dict[int, list[tuple[int, Any]]]:
    """``{generation: [(list value, centre)]}`` of the live generations: a fingerprint (unsigned)
    or a unit vector."""
    live = {g for g, state, _ in generations(engine, table) if state in ("filling", "current")}
    found: dict[int, list[tuple[int, Any]]] = {g: [] for g in live}
    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT generation, list_value, centre, vector FROM simsql_partition_centres WHERE table_name = :t "
                 "ORDER BY generation, list_value"), {"t": table},
        )  # fmt: skip
        for generation, value, centre, vector in rows:
            if generation in found:
                stored_centre = int(centre) & MASK if centre is not None else decode_centre(vector)
                found[generation].append((int(value), stored_centre))
    return found


def centre_rows(engine: Engine, table: str) -> int:
    with engine.connect() as connection:
        return int(connection.execute(text("SELECT count(*) FROM simsql_partition_centres WHERE table_name = :t"), {"t": table}).scalar_one())


def nearest_list(live: list[tuple[int, Any]], fingerprint: int) -> int:
    """Brute force: the list whose centre is fewest bits away, the lowest list on ties."""
    return min(live, key=lambda lc: (hamming(fingerprint, lc[1]), lc[0]))[0]


def probed(generations_centres: dict[int, list[tuple[int, Any]]], distance: Callable[[Any], Any], probes: int) -> set[int]:
    """The ``probes`` lists of each live generation nearest by ``distance`` (lowest list on ties)."""
    chosen: set[int] = set()
    for live in generations_centres.values():
        chosen |= {value for value, _ in sorted(live, key=lambda lc: (distance(lc[1]), lc[0]))[:probes]}
    return chosen


def read_by_query(live: dict[int, list[tuple[int, Any]]], lists: set[int], part: int | None) -> bool:
    """Whether a probes query reads a row in list ``part``: a probed list, or left behind (NULL,
    or no live generation's range)."""
    ranges = [(g * LIST_SPAN, (g + 1) * LIST_SPAN - 1) for g in live]
    return part is None or part in lists or not any(low <= part <= high for low, high in ranges)


class Stored(NamedTuple):
    """What a brute force reads once: the rows (``{id: (fingerprint, list)}``, or for vectors
    ``{id: (vector, words, list)}``) and the live generations' centres."""

    rows: dict[int, Any]
    live: dict[int, list[tuple[int, Any]]]


def stored_text(engine: Engine) -> Stored:
    return Stored(rows_of(engine, Note), centres(engine, Note.__tablename__))


def expected_text(
    source: Engine | Stored, target: int, probes: int, limit: int, keep: Callable[[int], bool] = lambda key: True
) -> list[tuple[int, int]]:  # fmt: skip
    """Brute force of ``most_similar(select(Note), target, limit, probes=probes)``: (id, distance)."""
    state = stored_text(source) if isinstance(source, Engine) else source
    lists = probed(state.live, lambda centre: hamming(target, centre), probes)
    ranked = sorted(
        (hamming(target, fp), key)
        for key, (fp, part) in state.rows.items()
        if fp is not None and keep(key) and read_by_query(state.live, lists, part)
    )
    return [(key, distance) for distance, key in ranked[:limit]]


def answer(engine: Engine, stmt: Any) -> list[tuple[int, int]]:
    with Session(engine) as session:
        return [(row[0].id, int(row[1])) for row in session.execute(stmt)]


def fingerprint_of(value: str) -> int:
    return binding_for(Note).fingerprinter.fingerprint(value)


def left_behind_count(engine: Engine, model: type) -> int:
    live = centres(engine, model.__tablename__)  # type: ignore[attr-defined]
    return sum(fp is not None and read_by_query(live, set(), part) for fp, part in rows_of(engine, model).values())


@pytest.fixture(autouse=True)
def lists_never_step_aside(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests here check what the lists' plan reads (brute force over probed lists): the
    step-aside to the exact plan (tests/test_lists_collateral.py) is turned off."""
    monkeypatch.setattr(plan_size, "STEP_ASIDE_SHARE", 10.0)
    monkeypatch.setattr(plan_size, "STEP_ASIDE_ROWS", 0)


# -- text: the fit, the queries ----------------------------------------------------------------


def test_fit_places_every_row_and_probes_answer_as_brute_force(any_engine: Engine) -> None:
    rows = corpus(1800)
    load(any_engine, Note, rows)
    fingerprinted = sum(r["body"] is not None for r in rows)
    result = fit_lists(any_engine, Note.__tablename__, lists=16, seed=3)
    assert (result.generation, result.lists, result.left_behind) == (1, 16, 0)
    assert result.rows_placed == fingerprinted and result.sample_rows == fingerprinted
    assert result.largest_list >= result.median_list > 0
    assert generations(any_engine, Note.__tablename__) == [(1, "current", 16)]

    live = centres(any_engine, Note.__tablename__)[1]
    assert [value for value, _ in live] == [LIST_SPAN + i for i in range(16)]
    stored_rows = rows_of(any_engine, Note)
    for key, (fp, part) in stored_rows.items():
        assert part == (None if fp is None else nearest_list(live, fp)), key
    assert len({part for _, part in stored_rows.values() if part is not None}) == 16  # every list used

    targets: list[Any] = [rows[0]["body"], rows[100]["body"], _sentence(random.Random(1), 2), "vacuum replication snapshot"]
    state = stored_text(any_engine)
    for target in targets:
        fp = fingerprint_of(f"{target}")
        for probes in (1, 3, 16, 40):
            for limit in (10, 25):
                found = answer(any_engine, simsql.most_similar(select(Note), target, limit=limit, probes=probes))
                assert found == expected_text(state, fp, probes, limit), (target, probes, limit)
        exact = answer(any_engine, simsql.most_similar(select(Note), target, limit=25))
        assert answer(any_engine, simsql.most_similar(select(Note), target, limit=25, probes=16)) == exact
        assert answer(any_engine, simsql.most_similar(select(Note), target, limit=25, probes=ALL)) == exact
        within = answer(any_engine, simsql.most_similar(select(Note), target, limit=25, max_distance=18, probes=4))
        assert within == [m for m in expected_text(state, fp, 4, 25) if m[1] <= 18]

    # the filter applies before the limit: a full page of even keys, ranked among the even keys
    filtered = answer(any_engine, simsql.most_similar(select(Note).where(Note.id % 2 == 0), targets[2], limit=20, probes=2))
    assert filtered == expected_text(state, fingerprint_of(targets[2]), 2, 20, keep=lambda key: key % 2 == 0)
    assert len(filtered) == 20
    topic = {r["id"]: r["topic"] for r in rows}  # another topic's rows: few in the lists near the target, all of them
    filtered = answer(any_engine, simsql.most_similar(select(Note).where(Note.topic == 3), targets[2], limit=20, probes=2))
    assert filtered == expected_text(state, fingerprint_of(targets[2]), 2, 20, keep=lambda key: topic[key] == 3)

    # a row target excludes itself; exclude= leaves out more
    with Session(any_engine) as session:
        row = session.get(Note, 9)  # a near-duplicate: its source is among its neighbours
        assert row is not None and row.simhash is not None
        found = [(r[0].id, int(r[1])) for r in session.execute(simsql.most_similar(select(Note), row, limit=10, probes=2))]
        assert found == expected_text(state, row.simhash, 2, 10, keep=lambda key: key != 9)
        dropped = {found[0][0], found[3][0]}
        found = [(r[0].id, int(r[1])) for r in session.execute(
            simsql.most_similar(select(Note), row, limit=10, probes=2, exclude=sorted(dropped)))]  # fmt: skip
        assert found == expected_text(state, row.simhash, 2, 10, keep=lambda key: key != 9 and key not in dropped)


def test_orm_writes_are_placed_and_raw_writes_are_left_behind_yet_read(any_engine: Engine) -> None:
    rows = corpus(900)
    load(any_engine, Note, rows)
    fit_lists(any_engine, Note.__tablename__, lists=10)
    live = centres(any_engine, Note.__tablename__)[1]
    rng = random.Random(4)
    with Session(any_engine) as session:  # ORM inserts, and updates of the text, after the fit
        session.add_all(Note(id=5000 + i, title="new", body=_sentence(rng, i % TOPICS), topic=i % TOPICS) for i in range(6))
        for key in (1, 2, 3):
            note = session.get(Note, key)
            assert note is not None
            note.body = _sentence(rng, 7)
        session.commit()
    placed = rows_of(any_engine, Note)
    for key in [*range(5000, 5006), 1, 2, 3]:
        fp, part = placed[key]
        assert fp is not None and part == nearest_list(live, fp), key
    with Session(any_engine) as session:  # the text gone: no fingerprint, no list
        note = session.get(Note, 4)
        assert note is not None
        note.title, note.body = None, None
        session.commit()
    assert rows_of(any_engine, Note)[4] == (None, None)

    # a raw insert (no ORM): fingerprinted by its writer, not placed; every probes query reads it
    target = _sentence(rng, 5)
    with any_engine.begin() as connection:
        connection.execute(insert(Note.__table__), [stored(Note, {"id": 7000, "title": None, "body": target, "topic": 5})])
    assert rows_of(any_engine, Note)[7000] == (fingerprint_of(target), None)
    assert left_behind_count(any_engine, Note) == 1
    found = answer(any_engine, simsql.most_similar(select(Note), target, limit=5, probes=1))
    assert found[0] == (7000, 0)
    assert found == expected_text(any_engine, fingerprint_of(target), 1, 5)
    far = target.replace("5", "1")  # another topic's words: another list, yet the row is read
    assert 7000 in [key for key, _ in answer(any_engine, simsql.most_similar(select(Note), far, limit=ALL, probes=1))]

    assert place_lists(any_engine, Note.__tablename__) == 1
    assert rows_of(any_engine, Note)[7000] == (fingerprint_of(target), nearest_list(live, fingerprint_of(target)))
    assert left_behind_count(any_engine, Note) == 0
    assert answer(any_engine, simsql.most_similar(select(Note), target, limit=5, probes=1))[0] == (7000, 0)
    assert place_lists(any_engine, Note.__tablename__) == 0


def test_refit_moves_every_row_to_a_new_generation(any_engine: Engine) -> None:
    load(any_engine, Note, corpus(900))
    fit_lists(any_engine, Note.__tablename__, lists=6)
    result = fit_lists(any_engine, Note.__tablename__, lists=20, seed=1)
    assert (result.generation, result.lists, result.left_behind) == (2, 20, 0)
    assert generations(any_engine, Note.__tablename__) == [(2, "current", 20)]
    assert centre_rows(any_engine, Note.__tablename__) == 20  # the first generation's centres are gone
    live = centres(any_engine, Note.__tablename__)[2]
    for key, (fp, part) in rows_of(any_engine, Note).items():
        if fp is not None:
            assert part is not None and 2 * LIST_SPAN <= part < 2 * LIST_SPAN + 20, key
            assert part == nearest_list(live, fp), key
    target = "index query planner vacuum4 replication4 backup4"
    assert answer(any_engine, simsql.most_similar(select(Note), target, probes=3)) == expected_text(
        any_engine, fingerprint_of(target), 3, 10
    )


def _writer(engine: Engine, seed: int, stop: threading.Event, counts: dict[str, int], errors: list[BaseException]) -> None:
    """ORM inserts (keys of its own) and text updates in small transactions until ``stop``."""
    rng = random.Random(seed)
    next_key = 100_000 * seed
    try:
        while not stop.is_set():
            try:
                with Session(engine) as session:
                    if rng.random() < 0.5:
                        next_key += 1
                        session.add(Note(id=next_key, title="w", body=_sentence(rng, rng.randrange(TOPICS)), topic=0))
                    else:
                        note = session.get(Note, rng.randrange(1, 900))
                        if note is not None:
                            note.body = _sentence(rng, rng.randrange(TOPICS))
                    session.commit()
                    counts["writes"] += 1
            except DBAPIError as error:  # a deadlock with the fit's batch: the writer tries again
                if "deadlock" not in str(error.orig).lower():
                    raise
                counts["deadlocks"] += 1
    except BaseException as error:  # noqa: BLE001 - handed back to the test
        errors.append(error)


def _every_row_is_read(engine: Engine, target: str) -> None:
    """In one snapshot: the rows with a fingerprint are the rows a probes=all query returns."""
    snapshot = engine.execution_options(isolation_level="REPEATABLE READ")
    with Session(snapshot) as session, session.begin():
        fingerprinted = set(session.scalars(select(Note.id).where(Note.simhash.is_not(None))))
        found = {row[0].id for row in session.execute(simsql.most_similar(select(Note), target, limit=ALL * 100, probes=ALL))}
        assert found == fingerprinted, (len(found), len(fingerprinted))


def test_refit_under_two_orm_writers_loses_no_row(any_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lists_place, "BATCH_ROWS", 200)  # many batches: the writers race them
    load(any_engine, Note, corpus(900))
    fit_lists(any_engine, Note.__tablename__, lists=6)
    stop, counts, errors = threading.Event(), {"writes": 0, "deadlocks": 0}, []
    writers = [threading.Thread(target=_writer, args=(any_engine, seed, stop, counts, errors)) for seed in (1, 2)]
    outcome: dict[str, Any] = {}

    def refit() -> None:
        try:
            outcome["result"] = fit_lists(any_engine, Note.__tablename__, lists=12)
        except BaseException as error:  # noqa: BLE001
            outcome["error"] = error

    for thread in writers:
        thread.start()
    fitter = threading.Thread(target=refit)
    fitter.start()
    writes_before = counts["writes"]
    checks = 0
    try:
        while fitter.is_alive() or checks == 0:
            _every_row_is_read(any_engine, "snapshot isolation commit3 rollback3")
            checks += 1
        fitter.join()
        writes_during = counts["writes"] - writes_before
    finally:
        stop.set()
        for thread in writers:
            thread.join(60)
    assert not errors, errors
    assert "error" not in outcome, outcome.get("error")
    assert outcome["result"].generation == 2 and writes_during > 0
    _every_row_is_read(any_engine, "index3 query3 planner3")

    live = centres(any_engine, Note.__tablename__)
    assert list(live) == [2] and generations(any_engine, Note.__tablename__) == [(2, "current", 12)]
    stored_rows = rows_of(any_engine, Note)
    fingerprinted = [part for fp, part in stored_rows.values() if fp is not None]
    in_lists = [p for p in fingerprinted if p is not None and 2 * LIST_SPAN <= p < 2 * LIST_SPAN + 12]
    behind = left_behind_count(any_engine, Note)
    assert len(fingerprinted) == len(in_lists) + behind
    assert place_lists(any_engine, Note.__tablename__) == behind
    assert left_behind_count(any_engine, Note) == 0
    for key, (fp, part) in rows_of(any_engine, Note).items():  # no row left in a stale list
        assert fp is None or part == nearest_list(live[2], fp), key


# -- a fit stopped halfway ---------------------------------------------------------------------


def _stopped_after(batches: int) -> Callable[[str, int, int], None]:
    """A progress callback that stops the fit (as Ctrl-C would) once ``batches`` batches are placed."""
    calls: list[int] = []

    def stop(phase: str, done: int, total: int) -> None:
        if phase == "place":
            calls.append(done)
            if len(calls) == batches:
                raise KeyboardInterrupt

    return stop


def _every_probe_count_is_brute_force(engine: Engine, targets: list[str]) -> None:
    state = stored_text(engine)
    for target in targets:
        exact = answer(engine, simsql.most_similar(select(Note), target, limit=30))
        assert answer(engine, simsql.most_similar(select(Note), target, limit=30, probes=ALL)) == exact
        for probes in (1, 4):
            found = answer(engine, simsql.most_similar(select(Note), target, limit=30, probes=probes))
            assert found == expected_text(state, fingerprint_of(target), probes, 30), (target, probes)


def test_a_stopped_fit_loses_no_row_and_the_next_one_resumes(any_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lists_place, "BATCH_ROWS", 250)
    rows = corpus(1000)
    load(any_engine, Note, rows)
    targets = [rows[10]["body"], "trigger2 function2 sequence2 the of and", rows[500]["body"]]
    with pytest.raises(KeyboardInterrupt):
        fit_lists(any_engine, Note.__tablename__, lists=8, progress=_stopped_after(2))
    assert generations(any_engine, Note.__tablename__) == [(1, "filling", 8)]
    parts = [part for fp, part in rows_of(any_engine, Note).values() if fp is not None]
    assert 0 < sum(p is not None for p in parts) < len(parts)  # halfway: some placed, some not
    _every_probe_count_is_brute_force(any_engine, targets)

    resumed = fit_lists(any_engine, Note.__tablename__, lists=30, seed=9)  # a stopped fit's settings are kept
    assert (resumed.generation, resumed.lists, resumed.left_behind) == (1, 8, 0)
    assert generations(any_engine, Note.__tablename__) == [(1, "current", 8)]
    assert resumed.rows_placed == len(parts) - sum(p is not None for p in parts)
    live = centres(any_engine, Note.__tablename__)[1]
    assert all(fp is None or part == nearest_list(live, fp) for fp, part in rows_of(any_engine, Note).values())

    # a refit stopped halfway: two live generations, both probed, nothing lost
    with pytest.raises(KeyboardInterrupt):
        fit_lists(any_engine, Note.__tablename__, lists=5, progress=_stopped_after(1))
    assert generations(any_engine, Note.__tablename__) == [(1, "current", 8), (2, "filling", 5)]
    _every_probe_count_is_brute_force(any_engine, targets)
    assert fit_lists(any_engine, Note.__tablename__).generation == 2
    assert generations(any_engine, Note.__tablename__) == [(2, "current", 5)]
    assert left_behind_count(any_engine, Note) == 0
    _every_probe_count_is_brute_force(any_engine, targets)


_KILLED_FIT = """
import sys, time
from simsql.lifecycle import lists, lists_place
lists_place.BATCH_ROWS = 200

def progress(phase, done, total):
    if phase == "place" and done >= 400:
        print("placing", flush=True)
        time.sleep(600)

lists.fit_lists(sys.argv[1], "part_notes", lists=8, progress=progress)
"""


def test_a_fit_killed_with_sigkill_loses_no_row_and_the_next_one_resumes(any_engine: Engine, any_url: str) -> None:
    rows = corpus(1000)
    load(any_engine, Note, rows)
    fit = subprocess.Popen([sys.executable, "-c", _KILLED_FIT, any_url], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=environment())
    try:
        assert fit.stdout is not None and fit.stdout.readline() == b"placing\n", "the fit ended before it could be killed"
        os.kill(fit.pid, signal.SIGKILL)
    finally:
        if fit.poll() is None:
            fit.kill()
        fit.wait(timeout=30)
    assert fit.returncode == -signal.SIGKILL
    assert generations(any_engine, Note.__tablename__) == [(1, "filling", 8)]
    parts = [part for fp, part in rows_of(any_engine, Note).values() if fp is not None]
    assert 400 <= sum(p is not None for p in parts) < len(parts)
    _every_probe_count_is_brute_force(any_engine, [rows[20]["body"], "cursor6 join6 aggregate6 window6"])
    resumed = fit_lists(any_engine, Note.__tablename__)
    assert (resumed.generation, resumed.lists, resumed.left_behind) == (1, 8, 0)
    assert generations(any_engine, Note.__tablename__) == [(1, "current", 8)]
    _every_probe_count_is_brute_force(any_engine, [rows[20]["body"], "cursor6 join6 aggregate6 window6"])


# -- vectors -----------------------------------------------------------------------------------


def vectors(n: int, seed: int = 3) -> np.ndarray:
    """``n`` vectors in 12 clusters, float32 values (what JSON and arrays both hold exactly)."""
    rng = np.random.default_rng(seed)
    middles = rng.normal(size=(12, DIMENSIONS))
    found = middles[rng.integers(0, 12, n)] + 0.9 * rng.normal(size=(n, DIMENSIONS))
    return found.astype(np.float32).astype(np.float64)


def vector_rows(engine: Engine, model: type) -> dict[int, tuple[np.ndarray, tuple[int, ...], int | None]]:
    """``{id: (vector, signature words (unsigned), list)}``."""
    m: Any = model
    words = [getattr(m, name) for name in binding_for(model).names.signature_words] or [m.simhash]
    with Session(engine) as session:
        return {
            r[0]: (np.asarray(r[1], dtype=np.float64), tuple(r[2:-1]), r[-1])
            for r in session.execute(select(m.id, m.embedding, *words, m.simhash_part))
        }


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def stored_vectors(engine: Engine, model: type) -> Stored:
    return Stored(vector_rows(engine, model), centres(engine, model.__tablename__))  # type: ignore[attr-defined]


def expected_vectors(
    state: Stored, model: type, query: np.ndarray, probes: int, limit: int, candidates: int, skip: int | None = None
) -> list[tuple[int, int]]:  # fmt: skip
    """Brute force of ``most_similar_vectors(..., probes=probes)``: the ``candidates`` rows nearest
    by signature among the probed lists and the rows left behind (ties by key), then the best
    ``limit`` by cosine (ties by distance, then candidate order); (id, distance)."""
    unit = query / np.linalg.norm(query)
    lists = probed(state.live, lambda centre: -float(centre @ unit), probes)
    signature = SIGNER.signatures_many(query[None, :])[0].words if binding_for(model).names.wide else (SIGNER.fingerprint(query),)
    pool = sorted(
        (sum(hamming(w, s) for w, s in zip(words, signature)), key, vector)
        for key, (vector, words, part) in state.rows.items()
        if key != skip and read_by_query(state.live, lists, part)
    )[:candidates]
    order = sorted(range(len(pool)), key=lambda i: (-_cosine(pool[i][2], query), pool[i][0], i))
    return [(pool[i][1], pool[i][0]) for i in order[:limit]]


@pytest.mark.parametrize("model", [WideVec, NarrowVec], ids=["wide", "narrow"])
def test_vector_probes_answer_as_brute_force(any_engine: Engine, model: type) -> None:
    data = vectors(1200)
    load(any_engine, model, [{"id": i + 1, "embedding": [float(x) for x in v]} for i, v in enumerate(data)])
    result = fit_lists(any_engine, model.__tablename__, lists=10, seed=2)  # type: ignore[attr-defined]
    assert (result.generation, result.lists, result.left_behind, result.rows_placed) == (1, 10, 0, 1200)
    live = centres(any_engine, model.__tablename__)[1]  # type: ignore[attr-defined]
    for key, (vector, _, part) in vector_rows(any_engine, model).items():  # the nearest centre by cosine
        cosines = [(-float(centre @ (vector / np.linalg.norm(vector))), value) for value, centre in live]
        assert part == min(cosines)[1], key

    rng = np.random.default_rng(8)
    state = stored_vectors(any_engine, model)
    queries = [data[5], data[700] + 0.3 * rng.normal(size=DIMENSIONS), rng.normal(size=DIMENSIONS)]
    with Session(any_engine) as session:
        for query in queries:
            for probes in (1, 3, 10):
                found = simsql.most_similar_vectors(session, select(model), query, limit=10, candidates=60, probes=probes)
                assert [(m.row.id, m.distance) for m in found] == expected_vectors(state, model, query, probes, 10, 60)
                assert all(abs(m.cosine - _cosine(np.asarray(m.row.embedding, float), query)) < 1e-9 for m in found)
        row = session.get(model, 33)
        assert row is not None
        found = simsql.most_similar_vectors(session, select(model), row, limit=10, candidates=40, probes=2)
        assert [(m.row.id, m.distance) for m in found] == expected_vectors(state, model, data[32], 2, 10, 40, skip=33)

        # an ORM insert after the fit is placed by cosine; a raw one is read anyway
        session.add(model(id=5000, embedding=[float(x) for x in -data[0]]))
        session.commit()
    with any_engine.begin() as connection:
        connection.execute(insert(model.__table__), [stored(model, {"id": 5001, "embedding": [float(x) for x in data[1]]})])  # type: ignore[attr-defined]
    placed = vector_rows(any_engine, model)
    assert placed[5000][2] == min((-float(c @ (-data[0] / np.linalg.norm(data[0]))), v) for v, c in live)[1]
    assert placed[5001][2] is None
    with Session(any_engine) as session:
        found = simsql.most_similar_vectors(session, select(model), data[1], limit=3, candidates=30, probes=1)
        assert [(m.row.id, m.distance) for m in found] == expected_vectors(stored_vectors(any_engine, model), model, data[1], 1, 3, 30)
        assert {2, 5001} <= {m.row.id for m in found}

        # a vector of another length: refused before anything is read or written
        before = (generations(any_engine, model.__tablename__), len(vector_rows(any_engine, model)))  # type: ignore[attr-defined]
        for wrong in (data[0][:-1], np.concatenate([data[0], [1.0]])):
            with pytest.raises(ValueError, match=str(DIMENSIONS)):
                simsql.most_similar_vectors(session, select(model), wrong, limit=10, candidates=60, probes=2)
        session.add(model(id=6000, embedding=[1.0] * (DIMENSIONS + 1)))
        with pytest.raises(ValueError, match=str(DIMENSIONS)):
            session.commit()
        session.rollback()
    assert (generations(any_engine, model.__tablename__), len(vector_rows(any_engine, model))) == before  # type: ignore[attr-defined]


# -- bad input, and drop -----------------------------------------------------------------------


def _has_column(engine: Engine, table: str, column: str) -> bool:
    here = "database()" if is_mysql(engine) else "current_schema()"
    with engine.connect() as connection:
        return bool(connection.execute(text(
            f"SELECT count(*) FROM information_schema.columns WHERE table_schema = {here} AND table_name = :t AND column_name = :c"
        ), {"t": table, "c": column}).scalar_one())  # fmt: skip


def _has_index(engine: Engine, table: str, index: str) -> bool:
    with engine.connect() as connection:
        if is_mysql(engine):
            sql = "SELECT count(*) FROM information_schema.statistics WHERE table_schema = database() AND table_name = :t AND index_name = :i"
        else:
            sql = "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND tablename = :t AND indexname = :i"
        return bool(connection.execute(text(sql), {"t": table, "i": index}).scalar_one())


def _raw_table(engine: Engine, rows: int) -> None:
    """``raw_notes`` (id, body): a table of the application's, attached with ``attach_table``
    (no model, no list column) and backfilled."""
    run(engine, "CREATE TABLE raw_notes (id int PRIMARY KEY, body text)")
    if rows:
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO raw_notes VALUES (:id, :body)"),
                               [{"id": r["id"], "body": r["body"]} for r in corpus(rows)])  # fmt: skip
    simsql.attach_table(engine, "raw_notes", source=["body"])
    if rows:
        simsql.backfill(engine, "raw_notes")


def test_fits_that_cannot_be_are_refused_with_nothing_written(any_engine: Engine) -> None:
    names = Names("raw_notes")
    _raw_table(any_engine, 0)
    with pytest.raises(ValueError, match="no fingerprinted rows"):
        fit_lists(any_engine, "raw_notes", lists=2)
    assert not _has_column(any_engine, "raw_notes", names.part) and not _has_index(any_engine, "raw_notes", names.part_index)
    assert generations(any_engine, "raw_notes") == []

    Base.metadata.create_all(any_engine, tables=[Note.__table__])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="no fingerprinted rows"):  # an empty table
        fit_lists(any_engine, Note.__tablename__)
    with Session(any_engine) as session:  # rows, none with words to fingerprint
        session.add_all(Note(id=i, title=None, body=None) for i in range(1, 4))
        session.commit()
    with pytest.raises(ValueError, match="no fingerprinted rows"):
        fit_lists(any_engine, Note.__tablename__, lists=1)
    load_more = [stored(Note, row) for row in corpus(6)]
    with any_engine.begin() as connection:
        connection.execute(insert(Note.__table__), [{**row, "id": row["id"] + 10} for row in load_more])
    with pytest.raises(ValueError, match="lists=7 is more than the 6 fingerprinted rows"):
        fit_lists(any_engine, Note.__tablename__, lists=7)
    for lists, error in ((0, ValueError), (-3, ValueError), (LIST_SPAN + 1, ValueError), (True, TypeError), (2.0, TypeError)):
        with pytest.raises(error, match="lists"):
            fit_lists(any_engine, Note.__tablename__, lists=lists)
    for seed in (-1, True, 1.5):
        with pytest.raises(ValueError, match="seed"):
            fit_lists(any_engine, Note.__tablename__, seed=seed)
    with pytest.raises(ValueError, match="sample"):
        fit_lists(any_engine, Note.__tablename__, sample=0)
    assert generations(any_engine, Note.__tablename__) == [] and centre_rows(any_engine, Note.__tablename__) == 0
    assert all(part is None for _, part in rows_of(any_engine, Note).values())

    with pytest.raises(NotAttached):
        fit_lists(any_engine, "no_such_table")
    with pytest.raises(NotAttached, match="fit them first"):
        place_lists(any_engine, Note.__tablename__)
    assert fit_lists(any_engine, Note.__tablename__, lists=6).left_behind == 0  # exactly as many lists as rows


@pytest.mark.parametrize("probes", [0, -1])
def test_probes_below_one_are_refused(probes: int) -> None:
    with pytest.raises(ValueError, match="probes must be at least 1"):
        simsql.most_similar(select(Note), "some text", probes=probes)
    with pytest.raises(ValueError, match="probes must be at least 1"):
        with Session() as session:
            simsql.most_similar_vectors(session, select(WideVec), np.ones(DIMENSIONS), probes=probes)


@pytest.mark.parametrize("probes", [True, False, 2.0, "3"])
def test_probes_of_another_type_are_refused(probes: Any) -> None:
    with pytest.raises(TypeError, match="probes must be an int"):
        simsql.most_similar(select(Note), "some text", probes=probes)
    with pytest.raises(TypeError, match="probes must be an int"):
        with Session() as session:
            simsql.most_similar_vectors(session, select(NarrowVec), np.ones(DIMENSIONS), probes=probes)


def test_probes_without_lists_or_in_a_side_table_are_refused(any_engine: Engine) -> None:
    SharedBase.metadata.create_all(any_engine)
    with pytest.raises(NotAttached, match="no partition lists: add simsql.lists.ListsMixin"):
        simsql.most_similar(select(Article), "some text", probes=2)
    with pytest.raises(SchemaError, match="side table"):
        simsql.most_similar(select(Post), "some text", probes=2)
    with pytest.raises(SchemaError, match="side table"):
        fit_lists(any_engine, "posts", lists=1)
    assert generations(any_engine, "posts") == []


def test_drop_removes_what_the_fit_added(any_engine: Engine) -> None:
    names = Names("raw_notes")
    _raw_table(any_engine, 300)
    assert not _has_column(any_engine, "raw_notes", names.part)
    if getattr(any_engine.dialect, "is_mariadb", False):
        # MariaDB adds no column online beside indexed generated columns (simsql's blocks): the
        # fit is refused, nothing written, and the message names the statement to run instead
        with pytest.raises(WouldLockTable, match="ADD COLUMN simhash_part INT NULL"):
            fit_lists(any_engine, "raw_notes", lists=4)
        assert not _has_column(any_engine, "raw_notes", names.part) and generations(any_engine, "raw_notes") == []
        with any_engine.begin() as connection:  # as the message says: the column is then the user's
            connection.execute(text("ALTER TABLE raw_notes ADD COLUMN simhash_part INT NULL"))
        fit_lists(any_engine, "raw_notes", lists=4)
        assert drop_lists(any_engine, "raw_notes") is True
        assert _has_column(any_engine, "raw_notes", names.part) and not _has_index(any_engine, "raw_notes", names.part_index)
        assert generations(any_engine, "raw_notes") == [] and centre_rows(any_engine, "raw_notes") == 0
        return
    result = fit_lists(any_engine, "raw_notes", lists=4)
    assert result.left_behind == 0 and result.rows_placed == sum(r["body"] is not None for r in corpus(300))
    assert _has_column(any_engine, "raw_notes", names.part) and _has_index(any_engine, "raw_notes", names.part_index)
    assert place_lists(any_engine, "raw_notes") == 0
    assert drop_lists(any_engine, "raw_notes") is True
    assert not _has_column(any_engine, "raw_notes", names.part) and not _has_index(any_engine, "raw_notes", names.part_index)
    assert generations(any_engine, "raw_notes") == [] and centre_rows(any_engine, "raw_notes") == 0
    assert drop_lists(any_engine, "raw_notes") is False


def test_drop_keeps_a_models_column_and_a_later_fit_places_every_row_again(any_engine: Engine) -> None:
    """A model's column and index are the model's: they stay, and every row is read again."""
    rows = corpus(300)
    load(any_engine, Note, rows)
    fit_lists(any_engine, Note.__tablename__, lists=5)
    assert drop_lists(any_engine, Note.__tablename__) is True
    assert _has_column(any_engine, Note.__tablename__, Names(Note.__tablename__).part)
    assert _has_index(any_engine, Note.__tablename__, Names(Note.__tablename__).part_index)
    assert generations(any_engine, Note.__tablename__) == [] and centre_rows(any_engine, Note.__tablename__) == 0
    for target in (rows[3]["body"], "lock1 snapshot1 isolation1"):
        exact = answer(any_engine, simsql.most_similar(select(Note), target, limit=15))
        assert answer(any_engine, simsql.most_similar(select(Note), target, limit=15, probes=1)) == exact
    with pytest.raises(NotAttached):
        place_lists(any_engine, Note.__tablename__)

    # a fit after the drop: the rows' old list values (the column stayed) are no list of the new
    # centres; every row is placed again, none left in a list it is not nearest to
    result = fit_lists(any_engine, Note.__tablename__, lists=5, seed=4)
    assert result.left_behind == 0
    (generation,) = centres(any_engine, Note.__tablename__)
    live = centres(any_engine, Note.__tablename__)[generation]
    for key, (fp, part) in rows_of(any_engine, Note).items():
        assert fp is None or part == nearest_list(live, fp), key
    _every_probe_count_is_brute_force(any_engine, [rows[3]["body"], "lock1 snapshot1 isolation1"])
