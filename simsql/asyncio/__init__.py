"""simsql for asyncio applications: the sync API, awaited.

Every function takes an ``AsyncSession``, ``AsyncConnection`` or ``AsyncEngine``
(``sqlalchemy.ext.asyncio``) where the sync API takes a ``Session`` or ``Engine``, every other
parameter as the sync function takes it, and gives the same answer::

    from .. import asyncio as simsql_async

    match = await simsql_async.find_original(session, Article, text)
    groups = await simsql_async.duplicate_groups(session, Article)
    await simsql_async.attach_table(engine, "articles", ["title", "body"])
    await simsql_async.backfill(engine, "articles")

``simsql.most_similar`` and ``simsql.similar_to`` build statements: run them with
``await session.execute(...)``; nothing async-specific is needed.

Each function here is *generated* from its sync twin (:mod:`simsql.asyncio.runner`): the sync
function runs through SQLAlchemy's greenlet bridge, each statement awaited on the event loop,
fingerprints and text comparison in a worker thread. There is no second implementation to drift:
``tests/test_asyncio_twins.py`` checks that every operation of ``simsql`` that runs statements
has its twin here with the same parameters. Drivers tested: ``postgresql+psycopg_async``,
``postgresql+asyncpg``, ``mysql+aiomysql``. Install with ``pip install "simsql[async]"``
(SQLAlchemy's asyncio extra brings greenlet, which SQLAlchemy 2.1 no longer installs itself).
"""

from __future__ import annotations

from ..lifecycle.backfill import backfill as _backfill
from ..lifecycle.lists import drop_lists as _drop_lists
from ..lifecycle.lists import fit_lists as _fit_lists
from ..lifecycle.lists import place_lists as _place_lists
from ..lifecycle.refingerprinting import refingerprint as _refingerprint
from ..lifecycle.sampling import fit_background as _fit_background
from ..lifecycle.tables import attach_table as _attach_table
from ..lifecycle.tables import detach_table as _detach_table
from ..lifecycle.tables import status as _status
from ..lifecycle.vector_index import add_vector_index as _add_vector_index
from ..lifecycle.vector_index import drop_vector_index as _drop_vector_index
from ..queries import duplicate_groups as _duplicate_groups
from ..queries import find_original as _find_original
from ..queries import most_similar_many as _most_similar_many
from ..queries import most_similar_vectors as _most_similar_vectors
from ..queries import near_copy_vectors as _near_copy_vectors
from ..queries import near_duplicates as _near_duplicates
from ..queries import related_vectors as _related_vectors
from .runner import AsyncBind, on_engine, on_session

add_vector_index = on_engine(_add_vector_index)
attach_table = on_engine(_attach_table)
backfill = on_engine(_backfill)
detach_table = on_engine(_detach_table)
drop_vector_index = on_engine(_drop_vector_index)
drop_lists = on_engine(_drop_lists)
fit_lists = on_engine(_fit_lists)
place_lists = on_engine(_place_lists)
fit_background = on_engine(_fit_background)
refingerprint = on_engine(_refingerprint)
status = on_engine(_status)

duplicate_groups = on_session(_duplicate_groups)
find_original = on_session(_find_original)
most_similar_many = on_session(_most_similar_many)
most_similar_vectors = on_session(_most_similar_vectors)
near_copy_vectors = on_session(_near_copy_vectors)
near_duplicates = on_session(_near_duplicates)
related_vectors = on_session(_related_vectors)

__all__ = [
    "AsyncBind",
    "add_vector_index",
    "attach_table",
    "backfill",
    "detach_table",
    "drop_lists",
    "drop_vector_index",
    "duplicate_groups",
    "find_original",
    "fit_background",
    "fit_lists",
    "most_similar_many",
    "most_similar_vectors",
    "near_copy_vectors",
    "near_duplicates",
    "place_lists",
    "refingerprint",
    "related_vectors",
    "status",
]
