"""The statements of a backfill, one class per server; :mod:`.backfill` owns the flow.

The classes belong to the backends (:meth:`simsql.dialects.Backend.batch_sql` gives a job its
statements): :class:`~simsql.dialects.postgresql_backfill.PostgresBatchSQL` stores a batch with
one statement over ``unnest()`` arrays; :class:`~simsql.dialects.mysql_backfill.MySQLBatchSQL`
(MySQL 8.0+, MariaDB 10.6+, which have no arrays) loads it into a session temporary table typed
like the key, then joins. This module keeps the names they have had here.
"""

from __future__ import annotations

from sqlalchemy.engine import Connection, Dialect, Engine

from ..dialects import backend
from ..dialects.batch import BatchSQL, Fingerprinted, Job, encode_key
from ..dialects.mysql_backfill import MySQLBatchSQL
from ..dialects.postgresql_backfill import PostgresBatchSQL


def batch_sql(bind: Dialect | Connection | Engine, job: Job) -> BatchSQL:
    """The statements of ``job`` on the server behind ``bind``."""
    return backend(bind).batch_sql(job)


__all__ = ["BatchSQL", "Fingerprinted", "Job", "MySQLBatchSQL", "PostgresBatchSQL", "batch_sql", "encode_key"]
