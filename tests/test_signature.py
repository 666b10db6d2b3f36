"""The wide 256-bit signature: word 0 is the fingerprint, a slow reference for every bit and
margin, pinned outputs, and margin-directed probes checked against brute force."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import pytest
import xxhash

from simsql import EmptyDocument, Fingerprinter
from simsql.fingerprint import Background
from simsql.text.signature import (
    DEFAULT_LAYOUT,
    WIDE_BITS,
    BlockLayout,
    Signature,
    block_values,
    probe_costs,
    probe_values,
    probes,
    wide_seeds,
)
from simsql.text.weighting import quantize

SEEDS = Path(__file__).resolve().parent.parent.parent / "shared" / "seeds"

TEXTS = [
    "Shakespeare produced most of his known work between 1589 and 1613",
    "你妈妈喊你回家吃饭哦，回家罗回家罗",
    "SimHash 是 Google 用来处理海量网页去重的算法, it maps documents to 64-bit fingerprints.",
    "PostgreSQL is a powerful, open source object-relational database system with over 35 years of "
    "active development that has earned it a strong reputation for reliability and performance.",
    "a",
]

BASE = Fingerprinter()
CENTRED = Fingerprinter(background=Background(tuple(range(-32, 32)), tuple(range(31, -33, -1)), BASE.config_id))
CONFIGS = {
    "default": BASE,
    "v1": Fingerprinter(version=1),
    "seed7": Fingerprinter(seed=7),
    "chars": Fingerprinter(tokenizer="chars"),
    "shingles": Fingerprinter(shingle_size=3),
    "background": CENTRED,
}

# Pinned: stored signatures depend on these words. A failure here is a compatibility break.
GOLDEN = {
    TEXTS[0]: (0x76E884AF58F91792, 0xD5A117F9AF01637E, 0x05F14CC23C0B1E80, 0x5CAA1645C9D04F97),
    TEXTS[1]: (0x90374EDA27F48F7D, 0xBA1BABB87D6CFBD3, 0x21BB1878B3A05B9E, 0xD657EAB84497C990),
    TEXTS[2]: (0xFFD501A67F629C98, 0xED41A6CB8E7FB4C1, 0x5AC3F9C73325D11F, 0x9024245E267D3D1D),
}


def _seed_texts() -> list[str]:
    if not SEEDS.is_dir():
        return []
    return [path.read_text(encoding="utf-8") for path in sorted(SEEDS.iterdir())]


@pytest.mark.parametrize("name", CONFIGS)
def test_word_zero_is_the_fingerprint(name: str) -> None:
    fingerprinter = CONFIGS[name]
    texts = TEXTS + _seed_texts()
    signatures = fingerprinter.signatures_many(texts)
    assert [s.fingerprint for s in signatures if s] == fingerprinter.fingerprint_many(texts)


def test_golden_words() -> None:
    assert wide_seeds(0)[0] == 0
    for text, words in GOLDEN.items():
        assert BASE.signature(text).words == words


def _reference(fingerprinter: Fingerprinter, text: str) -> tuple[tuple[int, ...], list[float]]:
    """Bit by bit with Python ints: sum +w for features whose seeded hash has the bit set, -w
    otherwise; bit set when the sum is positive; margin |sum| / total weight."""
    counts = fingerprinter.feature_counts(text)
    values = np.array(list(counts.values()), dtype=np.float64)
    weights = [int(w) for w in quantize(fingerprinter.feature_weights(counts.keys(), values))]
    total = sum(weights)
    words, margins = [], []
    for seed in wide_seeds(fingerprinter.seed):
        hashes = [xxhash.xxh3_64_intdigest(feature, seed) for feature in counts]
        word = 0
        for bit in range(64):
            score = sum(w if h >> bit & 1 else -w for h, w in zip(hashes, weights))
            word |= (score > 0) << bit
            margins.append(abs(score) / total)
        words.append(word)
    return tuple(words), margins


@pytest.mark.parametrize("text", TEXTS)
def test_every_bit_and_margin_matches_a_slow_reference(text: str) -> None:
    words, margins = _reference(BASE, text)
    signature = BASE.signature(text)
    assert signature.words == words
    assert signature.margins == pytest.approx(margins, abs=1e-12)


def test_a_background_centres_word_zero_only() -> None:
    text = TEXTS[3]
    plain, centred = BASE.signature(text), CENTRED.signature(text)
    assert centred.words[0] == CENTRED.fingerprint(text) != plain.words[0]
    assert centred.words[1:] == plain.words[1:]
    assert centred.margins[64:] == plain.margins[64:]


def _document(seed: int, words: int = 600) -> str:
    """A deterministic text of Zipf-distributed words (no file needed): a hard case for SimHash,
    since every word is as informative as in real prose and none is boilerplate."""
    rng = random.Random(seed)
    vocabulary = [f"word{i}" for i in range(5000)]
    return " ".join(rng.choices(vocabulary, [1 / (i + 1) for i in range(5000)], k=words))


def test_light_edits_flip_low_margin_bits() -> None:
    """What margin-directed probing rests on: the bits an edit flips had small margins."""
    flipped, every = [], []
    for seed in range(4):
        text = _document(seed)
        edited = " ".join(text.split()[:540])  # the last tenth cut
        before, after = BASE.signature(text), BASE.signature(edited)
        changed = before.value ^ after.value
        flipped += [before.margins[bit] for bit in range(WIDE_BITS) if changed >> bit & 1]
        every += list(before.margins)
    assert len(flipped) >= 20, "the edits changed few bits: the check says little"
    assert np.median(flipped) < np.median(every) / 2


def test_block_values() -> None:
    signature = BASE.signature(TEXTS[3])
    assert signature.blocks() == block_values(signature.value)
    rebuilt = sum(value << (i * DEFAULT_LAYOUT.width) for i, value in enumerate(signature.blocks()))
    assert rebuilt == signature.value & ((1 << DEFAULT_LAYOUT.count * DEFAULT_LAYOUT.width) - 1)
    assert signature.distance(signature) == 0
    assert signature.distance(signature.value ^ 0b1011) == 3


def test_probes_start_with_every_blocks_own_value_then_rise_in_cost() -> None:
    signature = BASE.signature(TEXTS[3])
    found = probes(signature, budget=200)
    assert len(found) == 200
    assert [(p.block, p.value, p.cost) for p in found[: DEFAULT_LAYOUT.count]] == [
        (block, value, 0.0) for block, value in enumerate(signature.blocks())
    ]
    costs = [p.cost for p in found]
    assert costs == sorted(costs)
    assert len({(p.block, p.value) for p in found}) == len(found)
    for probe in found:
        own = signature.blocks()[probe.block]
        start = probe.block * DEFAULT_LAYOUT.width
        assert probe.value == own ^ sum(1 << (bit - start) for bit in probe.flipped)
        assert probe.cost == pytest.approx(sum(signature.margins[bit] for bit in probe.flipped))


@pytest.mark.parametrize("layout", [DEFAULT_LAYOUT, BlockLayout(count=10, width=24)], ids=str)
@pytest.mark.parametrize("budget", [12, 64, 700])
def test_probe_costs_are_the_costs_of_the_probe_values_in_their_order(layout: BlockLayout, budget: int) -> None:
    signature = BASE.signature(TEXTS[3])
    found = probes(signature, layout, budget=budget)
    assert [(p.block, p.value) for p in found] == probe_values(signature, layout, budget=budget)
    assert probe_costs(signature, layout, budget=budget).tolist() == pytest.approx([p.cost for p in found])


def test_probes_enumerate_subsets_in_exact_cost_order() -> None:
    """Against brute force: every subset of each block's `depth` weakest bits, sorted by cost."""
    layout, depth = BlockLayout(count=3, width=8), 5
    signature = BASE.signature(TEXTS[0])
    expected = []
    for block in range(layout.count):
        weakest = sorted(layout.bits_of(block), key=lambda bit: (signature.margins[bit], bit))[:depth]
        for size in range(1, depth + 1):
            for subset in itertools.combinations(weakest, size):
                expected.append(sum(signature.margins[bit] for bit in subset))
    budget = layout.count + len(expected)
    found = probes(signature, layout, budget=budget, depth=depth)
    assert len(found) == budget
    assert [p.cost for p in found[layout.count :]] == pytest.approx(sorted(expected))
    assert len({(p.block, p.value) for p in found}) == budget


def test_probes_reach_a_lightly_edited_copy() -> None:
    """A copy with a few words changed: one of the first probes hits one of its block values."""
    text = TEXTS[3] + " " + " ".join(_seed_texts()[:1])[:3000]
    words = text.split()
    edited = " ".join(f"replaced{i}" if i % 25 == 7 else w for i, w in enumerate(words))
    original, copy = BASE.signature(text), BASE.signature(edited)
    assert original.distance(copy) > 0
    theirs = set(enumerate(copy.blocks()))
    assert any((p.block, p.value) in theirs for p in probes(original, budget=64))


def test_bad_input() -> None:
    with pytest.raises(EmptyDocument):
        BASE.signature("   ")
    with pytest.raises(TypeError, match="got None"):
        BASE.signature(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="decode it first"):
        BASE.signatures_many([b"bytes"])  # type: ignore[list-item]
    assert BASE.signatures_many(["", "word"], empty="none")[0] is None
    signature = BASE.signature(TEXTS[0])
    with pytest.raises(ValueError, match="budget"):
        probes(signature, budget=3)
    with pytest.raises(ValueError, match="depth"):
        probes(signature, depth=21)
    with pytest.raises(ValueError, match="exceed"):
        BlockLayout(count=13, width=20)
    with pytest.raises(ValueError, match="at most 31"):
        BlockLayout(count=4, width=32)
    with pytest.raises(ValueError, match="4 words"):
        Signature((1, 2), (0.0,) * WIDE_BITS)
    with pytest.raises(ValueError, match="2\\*\\*64"):
        Signature((1, 2, 3, 1 << 64), (0.0,) * WIDE_BITS)
    with pytest.raises(ValueError, match="int in"):
        block_values(1 << WIDE_BITS)


def test_probes_find_copies_that_share_no_block() -> None:
    """Every 6th word replaced: where no block of the copy equals the original's (pigeonhole
    alone would miss it), margin-directed probes still reach one of its blocks within 256
    lookups."""
    unreached, probed = [], 0
    for seed in range(10):
        tokens = _document(seed).split()
        edited = " ".join(f"replaced{i}" if i % 6 == 1 else t for i, t in enumerate(tokens))
        original, copy = BASE.signature(" ".join(tokens)), BASE.signature(edited)
        theirs = set(enumerate(copy.blocks()))
        if theirs & set(enumerate(original.blocks())):
            continue
        probed += 1
        if not any((p.block, p.value) in theirs for p in probes(original, budget=256)):
            unreached.append(seed)
    assert probed >= 3, "few copies without a shared block: the test checks little"
    assert unreached == []


def test_a_signature_counts_the_distinct_features_it_was_computed_from() -> None:
    """What the probe budget of :func:`simsql.queries.wide.probe_budget` is sized by."""
    for fingerprinter in (BASE, CENTRED):
        texts = [TEXTS[0], TEXTS[2], TEXTS[0] + " " + TEXTS[0]]
        signatures = fingerprinter.signatures_many(texts)
        assert [s.features for s in signatures] == [len(fingerprinter.feature_counts(t)) for t in texts]
        assert signatures[0].features == signatures[2].features > 0  # distinct features, not counts
    assert Signature((1, 2, 3, 4), (0.0,) * WIDE_BITS).features == 0  # not known
    with pytest.raises(ValueError, match="features"):
        Signature((1, 2, 3, 4), (0.0,) * WIDE_BITS, features=-1)
