"""The wide originality signature: 256 SimHash bits with the confidence of each, and its probes.

The 64-bit fingerprint answers "which stored texts are within a few bits of this one" through
four 16-bit blocks: fast for near-duplicates, but an originality check that must reach further
(a copy with a header, a footer and reordered lines) reads too many index entries at 64 bits.
The wide signature is computed in the same pass from the same weighted features: each feature
is hashed with four XXH3 seeds, one signed bit sum per signature bit. Word 0 uses the
fingerprinter's own seed, so it *is* the 64-bit fingerprint, bit for bit (background included);
words 1-3 use seeds derived from it (:func:`wide_seeds`).

Because the sums are known when the text is fingerprinted, so is each bit's *margin*: how far
its weighted sum lies from the sign change, as a share of the document's total weight. An edit
flips the bits with the smallest margins first. :func:`probes` turns that into the block values
worth looking up, cheapest (most likely) first, the way multi-probe LSH does (Lv et al., VLDB
2007): each block's own value, then variants with its least confident bits flipped, in order of
the total margin flipped, within a budget.

Bit ``j`` of the signature is bit ``j % 64`` of word ``j // 64`` (least significant first), the
same numbering :func:`simsql.text.bits.blocks` uses within a word. Blocks of a
:class:`BlockLayout` are consecutive runs of bits from bit 0.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import xxhash

from .bits import check_fingerprint

WIDE_WORDS = 4
WIDE_BITS = 64 * WIDE_WORDS

_WORD_SEED_LABEL = b"simsql-wide-signature-word-%d"


def wide_seeds(seed: int) -> tuple[int, ...]:
    """The XXH3 seed of each signature word for a fingerprinter seeded ``seed``.

    Word 0 is ``seed`` itself (so word 0 is the fingerprint); word ``k`` is the XXH3 hash of a
    fixed label under ``seed``. A compatibility promise: stored signatures depend on these.
    """
    return (seed, *(xxhash.xxh3_64_intdigest(_WORD_SEED_LABEL % k, seed) for k in range(1, WIDE_WORDS)))


@dataclass(frozen=True)
class BlockLayout:
    """How the signature is cut into indexed blocks: ``count`` blocks of ``width`` bits.

    Two signatures within ``count - 1`` bits of each other (among the bits the blocks cover)
    share at least one equal block (pigeonhole); margin-directed probes reach further.
    """

    count: int = 12
    width: int = 20

    def __post_init__(self) -> None:
        for name in ("count", "width"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.width > 31:
            raise ValueError(f"width must be at most 31 bits (a signed 32-bit column), got {self.width}")
        if self.count * self.width > WIDE_BITS:
            raise ValueError(f"{self.count} blocks of {self.width} bits exceed the {WIDE_BITS}-bit signature")

    def bits_of(self, block: int) -> range:
        """Signature bit numbers block ``block`` covers."""
        if not 0 <= block < self.count:
            raise IndexError(f"block must be in 0..{self.count - 1}, got {block}")
        return range(block * self.width, (block + 1) * self.width)


DEFAULT_LAYOUT = BlockLayout()


@dataclass(frozen=True)
class Probe:
    """One index lookup: block ``block`` equal to ``value``; ``cost`` is the total margin of the
    bits flipped from the signature's own block value (0.0 for the value itself)."""

    cost: float
    block: int
    value: int
    flipped: tuple[int, ...] = field(default=())


@dataclass(frozen=True)
class Signature:
    """A 256-bit signature and the margin of each of its bits.

    Attributes:
        words: four unsigned 64-bit words; ``words[0]`` is the 64-bit fingerprint.
        margins: per signature bit, ``|weighted sum - threshold| / total weight`` (0.0 is a
            tie, which SimHash breaks towards 0); smaller means an edit flips it sooner.
        features: how many distinct features the text had (0: not known, as for a signature
            built from its words, or from a vector). An edit of a given size is a larger share
            of a text of few features and flips more of its bits, so the originality check
            probes deeper for it (:func:`simsql.queries.wide.probe_budget`).
    """

    words: tuple[int, ...]
    margins: tuple[float, ...]
    features: int = 0

    def __post_init__(self) -> None:
        if len(self.words) != WIDE_WORDS:
            raise ValueError(f"a signature has {WIDE_WORDS} words, got {len(self.words)}")
        for word in self.words:
            check_fingerprint(word, "word")
        if len(self.margins) != WIDE_BITS:
            raise ValueError(f"a signature has {WIDE_BITS} margins, got {len(self.margins)}")
        if isinstance(self.features, bool) or not isinstance(self.features, int) or self.features < 0:
            raise ValueError(f"features must be a non-negative int, got {self.features!r}")

    @property
    def fingerprint(self) -> int:
        """The 64-bit fingerprint the same fingerprinter gives this text."""
        return self.words[0]

    @property
    def value(self) -> int:
        """All 256 bits as one unsigned int (word ``k`` at bits ``64k..64k+63``)."""
        return sum(word << (64 * k) for k, word in enumerate(self.words))

    def distance(self, other: Signature | int) -> int:
        """Hamming distance over all 256 bits."""
        theirs = other.value if isinstance(other, Signature) else other
        return (self.value ^ theirs).bit_count()

    def blocks(self, layout: BlockLayout = DEFAULT_LAYOUT) -> tuple[int, ...]:
        """The value of each block of ``layout`` (block 0 holds bits 0..width-1)."""
        value, mask = self.value, (1 << layout.width) - 1
        return tuple((value >> (block * layout.width)) & mask for block in range(layout.count))


def block_values(value: int, layout: BlockLayout = DEFAULT_LAYOUT) -> tuple[int, ...]:
    """The block values of a 256-bit signature given as one int (see :attr:`Signature.value`)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << WIDE_BITS:
        raise ValueError(f"a signature is an int in [0, 2**{WIDE_BITS}), got {value!r}")
    mask = (1 << layout.width) - 1
    return tuple((value >> (block * layout.width)) & mask for block in range(layout.count))


def _subsets_by_cost(margins: Sequence[float]) -> Iterator[tuple[float, tuple[int, ...]]]:
    """Every non-empty subset of positions ``0..len(margins)-1`` (``margins`` ascending), in
    order of the sum of its margins: Lv et al.'s shift/expand heap, each subset generated once."""
    if not margins:
        return
    heap: list[tuple[float, tuple[int, ...]]] = [(margins[0], (0,))]
    while heap:
        cost, subset = heapq.heappop(heap)
        yield cost, subset
        last = subset[-1]
        if last + 1 < len(margins):
            heapq.heappush(heap, (cost + margins[last + 1], (*subset, last + 1)))  # expand
            heapq.heappush(heap, (cost - margins[last] + margins[last + 1], (*subset[:-1], last + 1)))  # shift


def _block_variants(
    signature: Signature, layout: BlockLayout, block: int, value: int, depth: int
) -> Iterator[tuple[float, int, int, tuple[int, ...]]]:
    """(cost, block, value, flipped bits) of one block's variants, cheapest first."""
    bits = sorted(layout.bits_of(block), key=lambda bit: (signature.margins[bit], bit))[:depth]
    start = block * layout.width
    for cost, subset in _subsets_by_cost([signature.margins[bit] for bit in bits]):
        flipped = tuple(bits[i] for i in subset)
        yield cost, block, value ^ sum(1 << (bit - start) for bit in flipped), flipped


_TABLE_DEPTH = 12
"""Up to this depth a block's variants are costed all at once (numpy, ``2**depth - 1`` subsets
per block); deeper, they are generated lazily in cost order (the heap above)."""


@lru_cache(maxsize=16)
def _subset_matrix(depth: int) -> np.ndarray:
    """Every non-empty subset of ``depth`` positions as a row of 0/1, in order of its bit mask."""
    masks = np.arange(1, 1 << depth, dtype=np.int64)
    return (masks[:, None] >> np.arange(depth)) & 1


def _variant_table(
    signature: Signature, layout: BlockLayout, count: int, depth: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """The ``count`` cheapest variants over all blocks, in the order of :func:`probes` (cost,
    then block, then subset), every subset costed at once: their costs, blocks, values, subset
    masks (bit ``j``: the block's ``j``-th weakest bit flipped) and each block's weakest bits."""
    margins = np.asarray(signature.margins, dtype=np.float64)
    bits = np.arange(layout.count * layout.width).reshape(layout.count, layout.width)
    weakest = np.take_along_axis(bits, np.argsort(margins[bits], axis=1, kind="stable")[:, :depth], axis=1)
    subsets = _subset_matrix(depth)
    costs = (margins[weakest] @ subsets.T).ravel()  # (block, subset) flattened
    if count < costs.size:  # the cheapest ``count``, ties at the boundary by (block, subset)
        chosen = np.flatnonzero(costs <= np.partition(costs, count - 1)[count - 1])
    else:
        chosen = np.arange(costs.size)
    chosen = chosen[np.lexsort((chosen, costs[chosen]))][:count]
    blocks, rows = np.divmod(chosen, subsets.shape[0])
    flips = (subsets[rows] << (weakest[blocks] - blocks[:, None] * layout.width)).sum(axis=1)
    own = np.asarray(signature.blocks(layout), dtype=np.int64)
    return costs[chosen], blocks, own[blocks] ^ flips, rows + 1, weakest


def probe_values(
    signature: Signature, layout: BlockLayout = DEFAULT_LAYOUT, *, budget: int = 64, depth: int = 10
) -> list[tuple[int, int]]:
    """``(block, value)`` of :func:`probes`, in its order, without building each :class:`Probe`
    (the index stage's hot path)."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < layout.count or not 0 <= depth <= _TABLE_DEPTH:
        return [(probe.block, probe.value) for probe in probes(signature, layout, budget=budget, depth=depth)]
    own = list(enumerate(signature.blocks(layout)))
    if budget == layout.count or depth == 0:
        return own
    _, blocks, values, _, _ = _variant_table(signature, layout, budget - layout.count, depth)
    return own + list(zip(blocks.tolist(), values.tolist()))


def probe_costs(signature: Signature, layout: BlockLayout = DEFAULT_LAYOUT, *, budget: int = 64, depth: int = 10) -> np.ndarray:
    """The cost (total margin flipped) of each of :func:`probe_values`'s probes, in its order
    (0.0 for each block's own value): what a stopping rule by margin reads (``benchmarks/probe_stop.py``)."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < layout.count or not 0 <= depth <= _TABLE_DEPTH:
        return np.asarray([probe.cost for probe in probes(signature, layout, budget=budget, depth=depth)], dtype=np.float64)
    if budget == layout.count or depth == 0:
        return np.zeros(layout.count)
    costs = _variant_table(signature, layout, budget - layout.count, depth)[0]
    return np.concatenate([np.zeros(layout.count), costs])


def probes(
    signature: Signature, layout: BlockLayout = DEFAULT_LAYOUT, *, budget: int = 64, depth: int = 10
) -> list[Probe]:
    """The ``budget`` block lookups most likely to find a signature close to this one.

    First every block's own value (cost 0), then, across all blocks, variants that flip subsets
    of each block's ``depth`` least confident bits, in increasing order of the margin they
    flip. Ties keep a fixed order (block, then bit), so the list is deterministic.
    """
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < layout.count:
        raise ValueError(f"budget must be an int of at least {layout.count} (one probe per block), got {budget!r}")
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= layout.width:
        raise ValueError(f"depth must be an int in 0..{layout.width}, got {depth!r}")
    own = signature.blocks(layout)
    found = [Probe(0.0, block, own[block]) for block in range(layout.count)]
    if budget == layout.count or depth == 0:
        return found
    if depth <= _TABLE_DEPTH:
        costs, blocks, values, masks, weakest = _variant_table(signature, layout, budget - layout.count, depth)
        for cost, block, value, mask in zip(costs.tolist(), blocks.tolist(), values.tolist(), masks.tolist()):
            flipped = tuple(int(bit) for j, bit in enumerate(weakest[block]) if mask >> j & 1)
            found.append(Probe(cost, block, value, flipped))
        return found
    streams = [_block_variants(signature, layout, block, own[block], depth) for block in range(layout.count)]
    for cost, block, value, flipped in heapq.merge(*streams, key=lambda item: (item[0], item[1])):
        if len(found) >= budget:
            break
        found.append(Probe(cost, block, value, flipped))
    return found
