"""Partition lists: "most similar" on a large table through an index, like pgvector's IVFFlat.

Opt in per table, then fit::

    from .lists import ListsMixin, fit_lists

    class Article(ListsMixin, simsql.WideSimHashMixin, Base):
        ...

    fit_lists(engine, "articles")            # or: simsql lists fit --table articles
    session.execute(simsql.most_similar(select(Article), text, recall=0.95))  # or probes=32

A table attached with :func:`simsql.attach_table` (or ``simsql attach``) needs no model change:
the fit adds the list column and its index. How the lists work and what they give up:
:mod:`simsql.text.lists`; the recall each ``probes`` buys on real data: BENCHMARKS.md and
docs/lists.md.
"""

from __future__ import annotations

from .lifecycle.lists import ListsResult, drop_lists, fit_lists, place_lists
from .store.lists_mixin import ListsMixin
from .text.lists import RecallCurve

__all__ = ["ListsMixin", "ListsResult", "RecallCurve", "drop_lists", "fit_lists", "place_lists"]
