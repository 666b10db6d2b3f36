"""Attach, index, backfill, refingerprint, fit and detach: the lifecycle of simsql on a user's table.

Three steps for every change (Alembic's split between describing and running operations):
:mod:`.catalog` reads what is there, the backend's describer (``backend(bind).ddl``, a
:class:`~simsql.dialects.ddl_plan.DDLPlan` of steps) describes the statements as text, :mod:`.apply`
runs them bounded in time. :mod:`.attach`, :mod:`.tables`, :mod:`.backfill`, :mod:`.lists` and
:mod:`.refingerprinting` combine them.

The public home of the second-step operations (the top level holds the first ones:
:func:`simsql.attach_table`, :func:`simsql.backfill`, ...): :func:`refingerprint` moves a table
to another configuration online, :func:`fit_background` fits a :class:`~simsql.fingerprint.Background`
on a table's own rows; :func:`add_vector_index` and :func:`drop_vector_index` build and remove
pgvector's HNSW index on a vector table (:mod:`.vector_index`).
"""

from .refingerprinting import RefingerprintResult, refingerprint
from .sampling import fit_background
from .vector_index import add_vector_index, drop_vector_index

__all__ = ["RefingerprintResult", "add_vector_index", "drop_vector_index", "fit_background", "refingerprint"]
