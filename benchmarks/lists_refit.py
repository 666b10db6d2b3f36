"""A refit of the partition lists under two concurrent writers, for :mod:`benchmarks.lists`.

Two processes write through the ORM while ``fit_lists`` refits the text table: each loop
inserts new articles (ids from a range of its own) and updates existing rows' text to another
article's (so the row's fingerprint, and its list, change), committing every loop, from before the
refit starts until after it returns. Then every row with a fingerprint is checked to sit in a
current list (:func:`check_lists`): rows checked must equal rows placed.
"""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

import numpy as np
from sqlalchemy import create_engine, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from .lists_data import TextSet

WRITERS = 2
PER_LOOP = 10
"""Rows inserted and rows updated per loop (one commit)."""
AFTER = 3.0
"""Seconds the writers go on after the refit returns."""


def _writer(url: str, number: int, rows: int, bodies: list[str], stop: Any, results: Any, pause: float = 0.0) -> None:
    """Insert and update until ``stop`` is set, ``pause`` seconds between commits; put
    ``(inserted, updated, errors)``."""
    from .lists_models import TextDoc

    engine = create_engine(url)
    rng = np.random.default_rng(number)
    inserted = updated = errors = 0
    next_id = 100_000_000 * (number + 1)
    while not stop.is_set():
        try:
            with Session(engine) as session:
                for _ in range(PER_LOOP):
                    next_id += 1
                    session.add(TextDoc(id=next_id, body=bodies[int(rng.integers(len(bodies)))]))
                for key in rng.integers(1, rows + 1, size=PER_LOOP).tolist():
                    row = session.get(TextDoc, key)
                    if row is not None:
                        row.body = bodies[int(rng.integers(len(bodies)))]
                session.commit()
                inserted += PER_LOOP
                updated += PER_LOOP
            if pause:
                stop.wait(pause)
        except DBAPIError:  # a deadlock or lock timeout against the other writer or the refit: counted, retried
            errors += 1
            time.sleep(0.05)
    engine.dispose()
    results.put((number, inserted, updated, errors))


def refit_under_writers(
    engine: Engine, url: str, api: Any, data: TextSet, rows: int, model: type, lists: int | None = None, writer_pause: float = 0.0,
) -> dict[str, Any]:  # fmt: skip
    """``fit_lists`` again on ``model``'s table while :data:`WRITERS` processes write (as fast as
    they can, or ``writer_pause`` seconds between commits: the smoke run's writers race the refit
    without taking the machine's cores from everything else); the counts, the fit's result and
    :func:`check_lists`."""
    from . import scale

    rng = np.random.default_rng(77)
    bodies = [scale.article_text(data.paragraphs, data.members[k]) for k in rng.integers(0, len(data.members), size=2000).tolist()]
    context = multiprocessing.get_context("spawn")
    stop, results = context.Event(), context.Queue()
    writers = [context.Process(target=_writer, args=(url, i, rows, bodies, stop, results, writer_pause)) for i in range(WRITERS)]
    for process in writers:
        process.start()
    try:
        time.sleep(3.0)  # the writers connected and writing
        started = time.perf_counter()
        fitted = api.fit_lists(engine, model.__tablename__, lists=lists, seed=1)  # type: ignore[attr-defined]
        fit_seconds = time.perf_counter() - started
        time.sleep(AFTER)
    finally:  # a fit that raises stops the writers too, or the process would wait for them at exit
        stop.set()
    counts = [results.get(timeout=120) for _ in writers]
    for process in writers:
        process.join(timeout=60)
    from .lists_models import as_dict

    return {
        "fit_seconds": round(fit_seconds, 1), "fit": as_dict(fitted),
        "writers": [{"writer": n, "inserted": i, "updated": u, "errors": e} for n, i, u, e in sorted(counts)],
        "check": check_lists(engine, model),
    }  # fmt: skip


def check_lists(engine: Engine, model: type) -> dict[str, Any]:
    """Every row with a fingerprint in a current list: read every row's ``(fingerprint, list)``
    and the live generations' centres, and place each row again by the library's own rule
    (:meth:`simsql.text.lists.Centres.place`, the nearest centre, lowest list on ties).
    ``rows_checked`` must equal ``rows_in_their_list``; ``in_a_stale_list`` counts rows held by a
    live generation that is not the newest, ``left_behind`` rows no live list holds (NULL or a
    retired generation: still read by every query, so not lost, but not placed)."""
    from simsql.store import lists
    table: Any = model.__table__  # type: ignore[attr-defined]
    with engine.connect() as connection:
        schema = connection.exec_driver_sql("SELECT current_schema()" if engine.dialect.name == "postgresql" else "SELECT DATABASE()").scalar()
        live = lists.live_centres(connection, str(schema), table.name)
        rows = connection.execute(select(table.c.id, table.c.simhash, table.c.simhash_part).where(table.c.simhash.is_not(None))).all()
    newest = live[-1]
    fingerprints = np.array([int(r[1]) & 0xFFFFFFFFFFFFFFFF for r in rows], dtype=np.uint64)
    parts = np.array([-1 if r[2] is None else int(r[2]) for r in rows], dtype=np.int64)
    expected = newest.place(fingerprints).astype(np.int64)
    in_newest = (parts >= newest.base) & (parts <= newest.last)
    in_live = np.zeros(len(parts), dtype=bool)
    for centres in live:
        in_live |= (parts >= centres.base) & (parts <= centres.last)
    return {
        "generations_live": [c.generation for c in live], "lists": newest.lists,
        "rows_checked": len(rows), "rows_in_their_list": int((parts == expected).sum()),
        "in_newest_generation_other_list": int((in_newest & (parts != expected)).sum()),
        "in_a_stale_list": int((in_live & ~in_newest).sum()), "left_behind": int((~in_live).sum()),
        "misplaced_ids": [int(rows[i][0]) for i in np.flatnonzero(parts != expected)[:20]],
        "status": _status(engine, table.name),
    }  # fmt: skip


def _status(engine: Engine, name: str) -> Any:
    from .lists_models import lists_status

    return lists_status(engine, name)
