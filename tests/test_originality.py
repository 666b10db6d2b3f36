"""Fast checks of the originality research (research/): evasions (benchmarks/edits.py), the tail model, and a
tiny end-to-end smoke run of the v2 defaults on real man pages (skipped without them)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from benchmarks import edits  # noqa: E402
from benchmarks.corpus import CorpusUnavailable, english_documents  # noqa: E402
from benchmarks.hamming import distances, nearest_blocks  # noqa: E402
from benchmarks.sources import html_sections, rst_sections  # noqa: E402
from research import balance  # noqa: E402
from research.originality import beta_binomial_cdf, caught, pair_rates, reached  # noqa: E402
from research.originality_report import store_recall  # noqa: E402

EN = (
    "The first paragraph explains the idea. It has two sentences.\n\n"
    "The second paragraph gives an example! It is short.\n\n"
    "The third paragraph closes the article. Nothing more is said here?"
)
ZH = "第一段介绍了这个想法。它有两个句子。\n\n第二段给出了一个例子！它很短。\n\n第三段结束了这篇文章。这里没有更多的内容。"


def test_sentences_split_both_languages() -> None:
    assert len(edits.sentences(EN)) == 6
    assert len(edits.sentences(ZH)) == 6
    assert "".join(edits.sentences(ZH)).replace("\n", "") == ZH.replace("\n", "")


def test_sentence_in_and_out() -> None:
    rng = random.Random(1)
    inserted = edits.insert_sentence(EN, rng, ["A brand new sentence appears."])
    assert "A brand new sentence appears." in inserted and len(edits.sentences(inserted)) == 7
    deleted = edits.delete_sentence(EN, random.Random(2))
    assert len(edits.sentences(deleted)) == 5 and len(deleted) < len(EN)
    assert edits.delete_sentence("Only one.", random.Random(3)) == "Only one."


def test_shuffle_keeps_paragraphs_and_changes_order() -> None:
    for seed in range(10):
        out = edits.shuffle_paragraphs(EN, random.Random(seed))
        assert out != EN and sorted(out.split("\n\n")) == sorted(EN.split("\n\n"))


@pytest.mark.parametrize("kind", edits.EVASIONS)
@pytest.mark.parametrize("text", [EN, ZH])
def test_every_evasion_changes_the_text_deterministically(kind: str, text: str) -> None:
    donors = ["Another article says something else entirely.", "另一篇文章说了完全不同的话。"]
    a = edits.evade(kind, text, random.Random(5), donors)
    assert a != text and a == edits.evade(kind, text, random.Random(5), donors)


def test_header_footer_only_wraps() -> None:
    out = edits.evade("header_footer", ZH, random.Random(1), [])
    assert ZH in out and "推荐阅读" not in out and "版权声明" in out
    with pytest.raises(ValueError, match="unknown evasion"):
        edits.evade("paraphrase", EN, random.Random(1), [])


def test_beta_binomial_reduces_to_the_binomial_for_uniform_bits() -> None:
    cdf = beta_binomial_cdf(32.0, 16.0)
    # P(Binomial(64, 1/2) <= 8) = 2.75e-10
    assert cdf[8] == pytest.approx(2.75e-10, rel=0.05)
    wider = beta_binomial_cdf(32.0, 30.0)
    assert wider[8] > 100 * cdf[8]  # overdispersion fattens the tail


def test_pair_rates_set_natural_duplicates_apart() -> None:
    texts = [EN, EN + " Extra words at the end.", ZH]
    fps = np.array([1, 1, 2**64 - 1], dtype=np.uint64)
    rates = pair_rates(fps, texts)
    assert rates["natural_duplicates"][0] == 1  # EN and its extended copy: same text in fact
    assert rates["pairs"] == 2 and rates["at_most"][0] == 0
    assert distances(fps[:1], fps[2:])[0] == 63


def _spread(bits_per_block: tuple[int, int, int, int]) -> int:
    return sum(sum(1 << (16 * (3 - block) + bit) for bit in range(count)) for block, count in enumerate(bits_per_block))


def test_pairs_count_as_find_original_probes_reach_them() -> None:
    """simsql's pairs are found at t bits when one block is within the probe radius (2), as
    find_original's index finds them; every pair within 11 bits is."""
    base = np.array([0x0123456789ABCDEF] * 4, dtype=np.uint64)
    masks = [_spread(b) for b in ((2, 4, 4, 4), (3, 3, 3, 3), (4, 3, 3, 3), (0, 0, 0, 1))]
    other = base ^ np.array(masks, dtype=np.uint64)
    assert nearest_blocks(base, other).tolist() == [2, 3, 3, 0]
    d = distances(base, other)
    assert d.tolist() == [14, 12, 13, 1]
    found, every = caught(d, reached(base, other)), caught(d)
    assert every[14] == 1.0 and found[14] == 0.5  # (3,3,3,3) and (4,3,3,3) are beyond the probes
    assert found[11] == every[11] == 0.25


def test_pair_rates_count_probed_pairs_apart_from_every_pair() -> None:
    texts = ["alpha beta gamma delta", "epsilon zeta eta theta", "iota kappa lambda mu"]
    fps = np.array([0, _spread((3, 3, 3, 3)), _spread((2, 4, 4, 4))], dtype=np.uint64)
    rates = pair_rates(fps, texts)
    # (0,1): 12 bits, every block 3 off (not reached); (0,2): 14 bits, one block 2 off;
    # (1,2): 4 bits, one bit in each block
    assert [int(distances(fps[i : i + 1], fps[j : j + 1])[0]) for i, j in ((0, 1), (0, 2), (1, 2))] == [12, 14, 4]
    assert rates["at_most_exact"][14] == 3 and rates["at_most"][14] == 2
    assert rates["at_most_exact"][12] == 2 and rates["at_most"][12] == 1
    assert rates["at_most"][11] == rates["at_most_exact"][11] == 1


def test_store_recall_is_the_pairwise_share_when_nothing_unrelated_is_near() -> None:
    caught_by_t = [0.0] * 10 + [0.5, 0.5, 0.8, 0.9, 1.0]
    assert store_recall(caught_by_t, [0.0] * 15, 10**7, 16) == pytest.approx(1.0)
    assert store_recall(caught_by_t, [1e-3] * 15, 10**6, 16) == pytest.approx(0.0, abs=1e-9)  # 1,000 nearer each time
    crowded = store_recall(caught_by_t, [0.0] * 11 + [1e-5] * 4, 10**6, 16)  # ~10 before copies past 10 bits
    assert 0.5 < crowded < 1.0


def _population(units: list[str], members: list[list[int]]) -> balance.Population:
    lengths = np.array([len(u) for u in units])
    return balance.Population("sentences", "zh", units, lengths, [np.array(m, dtype=np.int64) for m in members])


def test_balance_sums_of_sentence_counts_are_the_fingerprints_of_the_joined_text() -> None:
    """Units ending in a Han character next to one starting with one: a Han bigram would cross
    the boundary if units were joined without a separator, and the cached sums would be wrong."""
    from simsql import Fingerprinter

    units = [s.strip() for s in edits.sentences(EN) + edits.sentences(ZH)] + ["没有句号的一句", "另一句也没有句号", "mixed 中文 words"]
    rng = random.Random(5)
    members = [rng.sample(range(len(units)), rng.randint(2, 6)) for _ in range(40)] + [[12, 13, 14]]
    pop = _population(units, members)
    assert "一句 另一句" in pop.text(len(members) - 1)
    for fp in (Fingerprinter(), Fingerprinter(version=1), Fingerprinter(chinese="jieba")):
        balance.verify(fp, pop, balance.Vocabulary(units, fp), sample=len(members))


def test_balance_text_sharing_is_the_shorter_articles_share() -> None:
    pop = _population(["a" * 10, "b" * 30, "c" * 60, "d" * 5], [[0, 1], [1, 2], [3], [0, 1, 2]])
    pairs, shares = balance._pairs_sharing(pop, np.arange(4))
    assert pairs == 6
    # (0,1) share "b": 30 / 40; (0,3) hold all of article 0: 40 / 40; (1,3): 90 / 90; article 2 shares nothing
    assert sorted(shares.tolist()) == [0.75, 1.0, 1.0]
    summary = balance._sharing_summary(pairs, shares)
    assert summary["sharing_a_unit"] == 0.5 and summary["max_share"] == 1.0 and summary["share_above_half"] == 0.5


def test_html_and_rst_sections_keep_prose_only() -> None:
    page = (
        '<html><head><title>x</title></head><body><div class="navheader">Prev Next</div>'
        "<h2>Intro</h2><p>Plain <code>words</code> here.</p><pre>code()</pre>"
        '<div class="para">A Publican paragraph.</div><h2>Next</h2><li>An item</li></body></html>'
    )
    assert html_sections(page) == [("Intro", ["Plain words here.", "A Publican paragraph."]), ("Next", ["An item"])]
    rst = "Title\n=====\n\nSome :class:`Model` prose with ``literal`` text that is long enough.\n\n::\n\n    code\n"
    assert rst_sections(rst) == [("Title", ["Some Model prose with literal text that is long enough."])]


def test_defaults_catch_light_evasions_on_real_pages() -> None:
    """A tiny smoke run: 12 man pages, every evasion but 5% substitution within 10 bits."""
    from simsql import Fingerprinter

    try:
        docs = english_documents(limit=12)
    except CorpusUnavailable as exc:
        pytest.skip(f"benchmark corpus unavailable: {exc}")
    fp = Fingerprinter()
    donors = [s for d in docs for s in edits.sentences(d.text)[:2]]
    caught = total = 0
    for kind in edits.EVASIONS:
        if kind == "sub_5":
            continue
        for d in docs:
            copy = edits.evade(kind, d.text, random.Random(f"{kind}:{d.doc_id}"), donors)
            total += 1
            caught += simsql_hamming(fp.fingerprint(d.text), fp.fingerprint(copy)) <= 10
    unrelated = [simsql_hamming(fp.fingerprint(a.text), fp.fingerprint(b.text)) for a, b in zip(docs, docs[1:])]
    assert caught / total >= 0.8
    assert min(unrelated) > 10


def simsql_hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()
