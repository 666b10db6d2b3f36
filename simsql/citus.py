"""Citus: distributing a table simsql fingerprints, in one call (docs/citus.md).

The public home of :func:`distribute`; the operation lives in :mod:`simsql.lifecycle.distribute`.
"""

from __future__ import annotations

from .lifecycle.distribute import distribute

__all__ = ["distribute"]
