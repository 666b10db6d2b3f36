"""Two submissions of one text, checked at the same time (issue 43: the submission pipeline as a
user runs it, check then insert).

A check reads; it stores nothing. Two workers that check the same new text before either stores
it both get None, and both store it. docs/originality.md ("A submission pipeline") gives the
recipe that closes the gap without a lock of simsql's own: check and store in one SERIALIZABLE
transaction and retry the one the server refuses. These tests hold both halves: the gap under the
servers' default isolation, and the recipe closing it on every server, for the 64-bit and the wide
signature, the retry finding the winner's row.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

import simsql

from .models import MODELS
from .test_find_original import _article
from .wide_models import WIDE_MODELS, WideBase

SIGNATURES = {"fingerprint": MODELS["columns"], "wide": WIDE_MODELS["columns"]}


def _store_both(sessions: list[Session], model: type, text: str) -> list[BaseException | None]:
    """Each session stores ``text`` and commits, on its own thread (on MySQL/MariaDB the first
    insert waits for the other's locks until the server picks a deadlock victim): what each got."""
    outcomes: list[BaseException | None] = [None, None]

    def store(index: int) -> None:
        try:
            sessions[index].add(model(id=100 + index, title="Submitted", body=text))
            sessions[index].commit()
        except DBAPIError as error:
            outcomes[index] = error
            sessions[index].rollback()

    threads = [threading.Thread(target=store, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a store never finished (lock wait without a victim)"
    return outcomes


def _checked_by_two(engine: Engine, model: type, text: str, **options: Any) -> tuple[list[Session], list[BaseException | None]]:
    """Two sessions check ``text`` (both find nothing: the table holds only an unrelated row),
    then both store it."""
    with Session(engine) as setup:
        setup.add(model(id=1, title="Other", body="Parliament debated the new tax law until late at night."))
        setup.commit()
    sessions = [Session(engine.execution_options(**options)) for _ in range(2)]
    for session in sessions:
        assert simsql.find_original(session, model, text) is None
    return sessions, _store_both(sessions, model, text)


def test_two_checks_before_either_store_both_pass_by_default(tables: Engine) -> None:
    """The gap the recipe closes: at the servers' default isolation both checks pass and the
    same text is stored twice."""
    model = SIGNATURES["fingerprint"]
    sessions, outcomes = _checked_by_two(tables, model, _article())
    for session in sessions:
        session.close()
    assert outcomes == [None, None]
    with Session(tables) as session:
        assert session.execute(select(func.count()).select_from(model).where(model.id >= 100)).scalar_one() == 2


@pytest.mark.parametrize("signature", sorted(SIGNATURES))
def test_serializable_check_and_store_lets_one_of_two_in_and_its_retry_finds_it(tables: Engine, signature: str) -> None:
    """The recipe: in SERIALIZABLE transactions the server refuses one of the two (PostgreSQL: a
    serialization failure; MySQL/MariaDB: a deadlock victim), and the refused one's retry, a new
    transaction, finds the row the other stored."""
    model = SIGNATURES[signature]
    WideBase.metadata.create_all(tables)
    text = _article()
    sessions, outcomes = _checked_by_two(tables, model, text, isolation_level="SERIALIZABLE")
    refused = [index for index, outcome in enumerate(outcomes) if outcome is not None]
    assert len(refused) == 1, outcomes
    loser = sessions[refused[0]]
    match = simsql.find_original(loser, model, text)  # the retry: a new transaction
    assert match is not None and match.row.id == 100 + (1 - refused[0])
    loser.rollback()
    for session in sessions:
        session.close()
    with Session(tables) as session:
        assert session.execute(select(func.count()).select_from(model).where(model.id >= 100)).scalar_one() == 1
