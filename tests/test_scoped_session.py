"""The queries run on every kind of sync bind a user has (simsql.store.awaiting.connection_of):
a Session, a Connection, and a ``scoped_session`` (what Flask-SQLAlchemy's ``db.session`` is),
which is not a ``Session`` instance but proxies one."""

from __future__ import annotations

from sqlalchemy import Engine
from sqlalchemy.orm import Session, scoped_session, sessionmaker

import simsql
from tests.models import Article

BODY = "Train drivers will strike on Monday over pay, the union said; most regional lines will run no trains at all."
COPY = BODY.replace("the union", "their union")  # 3 bits apart: one group at the default distance


def test_queries_run_on_a_scoped_session(tables: Engine) -> None:
    with Session(tables) as session:
        session.add_all([Article(id=1, title="Rail strike", body=BODY), Article(id=2, title="Rail strike", body=COPY)])
        session.add(Article(id=3, title="Harvest", body="A wet spring delayed the wheat harvest by three weeks."))
        session.commit()
        expected_groups = simsql.duplicate_groups(session, Article, max_distance=3)
        expected_match = simsql.find_original(session, Article, "Rail strike\n" + BODY)
    scoped = scoped_session(sessionmaker(tables))
    try:
        assert simsql.duplicate_groups(scoped, Article, max_distance=3) == expected_groups == [[1, 2]]
        match = simsql.find_original(scoped, Article, "Rail strike\n" + BODY)
        assert match is not None and expected_match is not None and match.row.id == expected_match.row.id == 1
    finally:
        scoped.remove()
