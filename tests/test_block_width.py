"""benchmarks.block_width cuts stored words into blocks exactly as Signature.blocks cuts one
signature, for every layout it compares (its rows-read figures rest on it)."""

from __future__ import annotations

import random

import numpy as np

from benchmarks.block_width import LAYOUTS, block_column
from simsql.text.signature import Signature


def test_block_columns_are_the_signatures_blocks() -> None:
    rng = random.Random(43)
    signatures = [Signature(tuple(rng.getrandbits(64) for _ in range(4)), (0.5,) * 256) for _ in range(50)]
    words = np.array([[w - (1 << 64) if w >= 1 << 63 else w for w in s.words] for s in signatures], dtype=np.int64).view(np.uint64)
    for layout in LAYOUTS:
        for block in range(layout.count):
            assert block_column(words, layout, block).tolist() == [s.blocks(layout)[block] for s in signatures]
