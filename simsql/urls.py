"""Database URLs as simsql reads them: :func:`normalise_url` picks the default driver of a plain
``postgresql://`` (psycopg 3) or ``mysql://`` (PyMySQL) URL, :func:`check_driver` refuses a
driver simsql does not test, :func:`engine_for` makes an engine of either.

The public home of these names; the code lives in :mod:`simsql.schema.urls`.
"""

from __future__ import annotations

from .schema.urls import check_driver, engine_for, normalise_url

__all__ = ["check_driver", "engine_for", "normalise_url"]
