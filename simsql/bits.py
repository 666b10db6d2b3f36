"""Arithmetic on 64-bit fingerprints, no database: Hamming distance, similarity, the signed
mapping PostgreSQL's ``bigint`` stores, and the 16-bit blocks of the block index.

The public home of these names (a promise kept across releases); the code lives in
:mod:`simsql.text.bits`.
"""

from __future__ import annotations

from .text.bits import blocks, cosine_estimate, hamming, similarity, to_signed, to_unsigned

__all__ = ["blocks", "cosine_estimate", "hamming", "similarity", "to_signed", "to_unsigned"]
