"""Partition lists: "most similar" on a large table through an index, like pgvector's IVFFlat.

Opt in per table, then fit::

    from simsql.partitions import PartitionListsMixin, fit_partitions

    class Article(PartitionListsMixin, simsql.WideSimHashMixin, Base):
        ...

    fit_partitions(engine, "articles")            # or: simsql partitions fit --table articles
    session.execute(simsql.most_similar(select(Article), text, probes=32))

A table attached with :func:`simsql.attach_table` (or ``simsql attach``) needs no model change:
the fit adds the list column and its index. How the lists work and what they give up:
:mod:`simsql.partitioning`; the recall each ``probes`` buys on real data: BENCHMARKS.md and
docs/partitions.md.
"""

from __future__ import annotations

from .lifecycle.partitions import PartitionsResult, drop_partitions, fit_partitions, place_partitions
from .partition_writes import PartitionListsMixin

__all__ = ["PartitionListsMixin", "PartitionsResult", "drop_partitions", "fit_partitions", "place_partitions"]
