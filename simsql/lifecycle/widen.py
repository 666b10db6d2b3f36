"""Move a version 2 table to algorithm version 3 in place, online and resumably, where the
backend does not stage a second fingerprint set (MySQL/MariaDB).

Version 3's fingerprint is version 2's bit for bit (:data:`simsql.text.fingerprint.WIDE_VERSION`):
what the move adds is the wide signature's words 1-3 and its block columns, beside the
fingerprints the table has. So nothing is swapped, only added:

1. **stage**: the resume cursor, then the word columns (stored) and the wide blocks (virtual,
   generated from the words), each added instantly where the server can (MariaDB: with the
   four block indexes set aside meanwhile and built again online at once); in columns mode the
   triggers that clear the words with the fingerprint (as on any wide table), and the move's
   own: a version 2 writer writes a new fingerprint or digest without words, so words it
   leaves unchanged beside them are cleared for the fill (only the fill writes words meanwhile,
   and it always changes them). In side-table mode a changed text deletes its side row, and a
   version 2 writer inserts a new one without words: nothing more is needed.
2. **fill**: the ordinary keyset backfill with the version 3 configuration, writing the words
   of every row that lacks them (resumable after any kill: each batch commits with its cursor).
   Queries meanwhile use the 64-bit fingerprints; ``find_original`` takes the wide path only
   once the registry says the table has the signature.
3. **index**: the wide block indexes, built online.
4. **switch**: one statement records version 3 and the wide signature; from its commit on, a
   version 2 ORM writer is refused (:func:`simsql.store.registry.confirm`). The move's trigger is then
   dropped, the rows written since the fill get their words, and the cursor goes.

Killed anywhere, the same call resumes from its cursor; after the switch, it finishes the last
steps. No step holds a lock that writers wait for beyond a statement's metadata lock.
"""

from __future__ import annotations

import dataclasses
import time

from sqlalchemy import Engine

from ..dialects import backend
from ..dialects.batch import Job
from ..dialects.ddl_plan import DDLPlan, TableShape
from ..schema.names import Names
from ..store import registry
from ..text.errors import WouldLockTable
from ..text.fingerprint import Fingerprinter
from . import apply, backfill, catalog
from .attach import describe_indexes


def move_in_place(
    engine: Engine, target: TableShape, names: Names, to: Fingerprinter, cursor: str, stage: bool, options: backfill.FillOptions,
    workers: int | None, index_timeouts: apply.Timeouts,
) -> tuple[int, int, float]:  # fmt: skip
    """Stage (unless a run staged already), fill, index and switch: rows given their words
    before the switch, rows given them after it, seconds the switch's statements took."""
    server, timeouts = backend(engine), options.timeouts
    label = f"{target.schema}.{target.table}"
    wide = names.with_wide(True)
    _stage(engine, target, names, to, cursor, record=stage, timeouts=timeouts)
    job = Job(target.schema, target.table, target.keys, target.key_types, target.source, wide, to, cursor=cursor)
    filled = backfill.fill(engine, job, label, options, workers)
    keys = wide.side_keys(target.keys) if wide.side else target.keys
    with engine.connect() as connection, apply.bounded(connection, apply.DDL_TIMEOUTS):
        indexes = describe_indexes(connection, target.schema, wide, keys, concurrently=True)
    apply.run_on_engine(engine, indexes, timeouts, relations=[label], concurrent_timeouts=index_timeouts)
    started = time.perf_counter()
    apply.run_on_engine(engine, server.ddl.widen_switch(target, names, to), timeouts, relations=[label])
    held = time.perf_counter() - started
    registry.forget(engine)
    # Rows version 2 writers wrote before the switch committed: their words now.
    caught_up = backfill.fill(engine, job, label, dataclasses.replace(options, progress=None), 0)
    apply.run_on_engine(engine, server.ddl.forget_cursors(target.schema, target.table, cursor), timeouts, relations=[label])
    return filled.rows_fingerprinted, caught_up.rows_fingerprinted, held


def _stage(
    engine: Engine, target: TableShape, names: Names, to: Fingerprinter, cursor: str, *, record: bool, timeouts: apply.Timeouts
) -> None:  # fmt: skip
    """Add what the move needs and is not there yet: all of it, and the cursor, on a first run
    (``record``); what a killed run left undone on a resumed one. A server that cannot add the
    columns beside indexed block columns online (MariaDB,
    :attr:`~simsql.dialects.Backend.alters_columns_beside_indexed_blocks`) gets them with the
    block indexes set aside and built again online at once (``DDL.widen(set_aside=True)``); a
    run killed meanwhile builds them when resumed."""
    server, label = backend(engine), f"{target.schema}.{target.table}"
    with engine.connect() as connection, apply.bounded(connection, apply.DDL_TIMEOUTS):
        present = catalog.present(connection, target.schema, target.table, names.with_wide(True))
        marked = registry.progress_config(connection, target.schema, names.set_aside_marker) is not None
        set_aside = not server.alters_columns_beside_indexed_blocks
    plan = server.ddl.widen(target, names, to, cursor, present, record=record, set_aside=set_aside)
    if marked:
        plan = DDLPlan((*plan.steps, *server.ddl.restore_set_aside(target, names, present).steps), plan.dialect)
    try:
        apply.run_on_engine(engine, plan, timeouts, relations=[label])
    except WouldLockTable as error:
        raise WouldLockTable(
            f"{error} The move to version {to.version} adds the wide signature's columns to {label} in place, "
            f"and {server.describe_server()} refuses to add them online. Move it offline at a quiet time instead: "
            "detach, attach (version 3 is the default) and backfill"
        ) from None


__all__ = ["move_in_place"]
