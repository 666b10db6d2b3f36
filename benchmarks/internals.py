"""The simsql internals the benchmarks and research need, and the only module that reads them.

Every other benchmark module uses simsql's public API. What is here has no public spelling yet,
and each item is the library's own rule, used rather than restated (a copy of the feature hash or
of the weighting would drift from the library and measure something it does not do). Each is a
request for a public name; until then a change to one of them breaks this module alone, and the
checks that compare cached-count fingerprints with ``Fingerprinter.fingerprint_many``
(``scale.verify``, ``research.balance.verify``) catch a rule that moved.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from re import Pattern

import numpy as np

from simsql import Fingerprinter
from simsql.text import bitsums, tokenize

HAN_RUN: Pattern[str] = tokenize._HAN_RUN
"""A run of Han characters, as simsql's tokenizer cuts them from other words."""

BYTE_BITS: np.ndarray = bitsums._BYTE_BITS
"""[256, 8]: the bits of each byte value, the table simsql sums hash bytes through."""

BYTE_OFFSETS: np.ndarray = bitsums._BYTE_OFFSETS
"""[1, 8]: ``256 * byte position``, so one histogram counts every byte of a hash apart."""


def feature_hashes(features: Sequence[bytes], seed: int) -> np.ndarray:
    """simsql's 64-bit hash of each feature under a configuration's ``seed`` (uint64)."""
    return bitsums.feature_hashes(features, seed)


def fingerprints_from_counts(fingerprinter: Fingerprinter, counts: Sequence[Counter[bytes]]) -> list[int | None]:
    """Fingerprints of documents given as feature counts (``Fingerprinter.feature_counts``): the
    second half of ``fingerprint_many``, so configurations that tokenize alike share the costly
    first half. ``None`` for a document without features."""
    out: list[int | None] = []
    for lo in range(0, len(counts), 256):
        out.extend(fingerprinter._fingerprint_counts(counts[lo : lo + 256]))
    return out


def warm_jieba() -> None:
    """Load simsql's private jieba dictionary now (about a second), not inside a timed pass."""
    tokenize._jieba()
