"""Fingerprints without a database: :func:`simhash` of a text, :func:`simhash_features` of
weighted features, the :class:`Fingerprinter` configuration, and what can be plugged into it
(an :class:`IdfTable` of weights, a fitted :class:`Background`).

The public home of these names (a promise kept across releases); the text layer that computes
them lives in :mod:`simsql.text` (tokenize, weight, hash, sum).
"""

from __future__ import annotations

from .text.background import Background
from .text.fingerprint import Fingerprinter, simhash, simhash_features
from .text.weighting import IdfTable

__all__ = ["Background", "Fingerprinter", "IdfTable", "simhash", "simhash_features"]
