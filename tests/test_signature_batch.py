"""A batch is computed as its texts one by one (issue 43).

``signatures_many`` and ``fingerprint_many`` number a batch's distinct features once (each hashed
under every seed, looked up in the weighting's table and classified by script once), scale each
document's weights apart in one pass and take all four words' bit sums from one set of per-byte
histograms. None of that may change a bit: these tests compare every batch with the same texts
fingerprinted alone, in every kind of configuration, on a batch that mixes English, Chinese and
odd texts (features shared by many documents, a feature only one document has, empty texts), and
pin the pieces (tokens, quantization, numbering) against their per-document rules. The golden
tests (tests/test_fingerprint.py, tests/test_signature.py) pin the values themselves.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from simsql import Fingerprinter
from simsql.text.bitsums import FeatureBatch, feature_hashes, han_features, weighted_fingerprints, weighted_signatures
from simsql.text.background import Background
from simsql.text.tokenize import _HAN_RUN, feature_counts, is_han_feature, normalize, word_tokens
from simsql.text.weighting import IdfTable, quantize

from .test_wide_background import NARROW_BG, WIDE_BG

ENGLISH = [
    "The replication slot keeps WAL segments until the standby confirms it has received them.",
    "The standby server replays WAL segments received from the primary; the slot keeps them.",
    "A checkpoint writes every dirty page of the buffer cache to disk and then the WAL can be recycled.",
    "Café naïve résumé — “quoted” ’tis: non-ASCII words (straße, Ｆｕｌｌ ｗｉｄｔｈ, ﬁ) among ASCII ones.",
    "only one document has this feature: zyxwvutsrqponm",
]
CHINESE = [
    "复制槽会保留预写日志段，直到备库确认已经收到它们。",
    "备库重放从主库收到的预写日志段；复制槽保留它们。",
    "检查点把缓冲区中的每个脏页写入磁盘，然后预写日志就可以回收。",
    "Replication lag in PostgreSQL 复制延迟的监控与告警 uses pg_stat_replication 和 WAL 发送进程。",
]
ODD = ["", "   \n\t", "!!! ...", "x", "中", "😀 emoji 😀", "lone \ud800 surrogate", "Привет мир", "한국어 カタカナ 𠀀𠀁", "tab\x0bvt\x85nel\xa0nbsp"]
TEXTS = [t for group in zip(ENGLISH, CHINESE, ODD) for t in group] + ENGLISH[4:] + ODD[4:] + ENGLISH + CHINESE

def _centred(fingerprinter: Fingerprinter, background: Background) -> Fingerprinter:
    return replace(fingerprinter, background=replace(background, fitted_for=fingerprinter.config_id))


IDF = IdfTable({"the": 0.5, "wal": 3.0, "复制": 2.5, "备库": 0.0, "zyxwvutsrqponm": 9.0}, default=4.0)
CONFIGURATIONS = {
    "v1": Fingerprinter(version=1),
    "v1 idf": Fingerprinter(version=1, weighting=IDF),
    "v2": Fingerprinter(),
    "v2 count": Fingerprinter(weighting="count"),
    "v2 log": Fingerprinter(weighting="log"),
    "v2 jieba_idf": Fingerprinter(weighting="jieba_idf"),
    "v2 idf": Fingerprinter(weighting=IDF),
    "v2 chars": Fingerprinter(tokenizer="chars"),
    "v2 shingles": Fingerprinter(shingle_size=2, seed=11),
    "v3": Fingerprinter(version=3),
    "v3 jieba": Fingerprinter(version=3, chinese="jieba"),
    "v2 background": _centred(Fingerprinter(), NARROW_BG),
    "v3 background": _centred(Fingerprinter(version=3), NARROW_BG),
    "v3 wide background": _centred(Fingerprinter(version=3), WIDE_BG),
    "v3 count wide background": _centred(Fingerprinter(version=3, weighting="count"), WIDE_BG),
    "v3 idf wide background": _centred(Fingerprinter(version=3, weighting=IDF), WIDE_BG),
}


def _alone(fingerprinter: Fingerprinter, text: str, wide: bool) -> object:
    """``text`` fingerprinted in a batch of its own (None without features)."""
    return (fingerprinter.signatures_many if wide else fingerprinter.fingerprint_many)([text], empty="none")[0]


@pytest.mark.parametrize("name", sorted(CONFIGURATIONS))
def test_a_batch_equals_its_texts_one_by_one(name: str) -> None:
    fingerprinter = CONFIGURATIONS[name]
    if "jieba" in name:
        pytest.importorskip("jieba")
    signatures = fingerprinter.signatures_many(TEXTS, empty="none")
    fingerprints = fingerprinter.fingerprint_many(TEXTS, empty="none")
    assert signatures == [_alone(fingerprinter, text, wide=True) for text in TEXTS]
    assert fingerprints == [_alone(fingerprinter, text, wide=False) for text in TEXTS]
    assert [None if s is None else s.fingerprint for s in signatures] == fingerprints
    assert sum(s is None for s in signatures) == sum(not fingerprinter.feature_counts(t) for t in TEXTS) > 0
    for text, signature in zip(TEXTS, signatures):
        if signature is not None:
            assert signature == fingerprinter.signature(text)
            assert signature.features == len(fingerprinter.feature_counts(text))


def test_batches_across_the_batch_size_equal_one_by_one() -> None:
    """More texts than one batch holds (256): the cut between batches changes nothing."""
    fingerprinter = Fingerprinter(version=3)
    texts = [f"{TEXTS[i % len(TEXTS)]} {i % 7} extra{i % 3}" for i in range(300)]
    assert fingerprinter.signatures_many(texts) == [fingerprinter.signature(t) for t in texts]
    assert fingerprinter.fingerprint_many(texts) == [fingerprinter.fingerprint(t) for t in texts]


def test_script_sums_of_a_batch_equal_each_text_alone() -> None:
    fingerprinter = Fingerprinter(version=3)
    texts = ENGLISH + CHINESE + ODD
    signed, weight = fingerprinter.script_sums(texts, 4)
    for row, text in enumerate(texts):
        alone_signed, alone_weight = fingerprinter.script_sums([text], 4)
        assert np.array_equal(signed[row], alone_signed[0]) and np.array_equal(weight[row], alone_weight[0])


def test_words_without_han_are_what_the_word_regex_finds_for_every_code_point() -> None:
    """The translate-and-split tokeniser against ``\\w+``, every non-Han code point between words."""
    words = re.compile(r"\w+")
    chars = [chr(c) for c in range(0x110000) if not _HAN_RUN.match(chr(c))]
    for start in range(0, len(chars), 500):
        block = chars[start : start + 500]
        text = "a" + "b".join(block) + "é c" + "".join(block) + " d"
        assert [t for chunk in word_tokens(text) for t in chunk] == [w.encode("utf-8", "surrogatepass") for w in words.findall(text)]
    ascii_text = "".join(map(chr, range(128))) * 2
    assert [t for chunk in word_tokens(ascii_text) for t in chunk] == re.findall(rb"\w+", ascii_text.encode())


def test_feature_counts_keep_the_order_in_which_features_appear() -> None:
    for text in ENGLISH + CHINESE + ODD:
        chunks = word_tokens(normalize(text), "bigrams")
        tokens = [t if isinstance(t, bytes) else t.encode("utf-8", "surrogatepass") for chunk in chunks for t in chunk]
        assert list(feature_counts(text)) == list(dict.fromkeys(tokens))


def test_quantize_per_document_equals_quantize_of_each() -> None:
    rng = np.random.default_rng(5)
    parts = [rng.random(n) * scale for n, scale in ((3, 1.0), (1, 7.5), (5, 0.0), (4, 1e-300), (2, 3e5), (6, 1.0))]
    parts[0][1] = 0.0
    joined = np.concatenate(parts)
    starts = np.cumsum([0] + [len(p) for p in parts[:-1]])
    assert np.array_equal(quantize(joined, starts), np.concatenate([quantize(p) for p in parts]))


def test_a_feature_batch_numbers_each_distinct_feature_once() -> None:
    documents = [feature_counts(t) for t in ENGLISH + CHINESE]
    batch = FeatureBatch.of(documents)
    assert batch.features == list(dict.fromkeys(f for counts in documents for f in counts))
    assert [batch.features[i] for i in batch.feature] == [f for counts in documents for f in counts]
    assert batch.counts.tolist() == [c for counts in documents for c in counts.values()]
    assert batch.doc_index.tolist() == [d for d, counts in enumerate(documents) for _ in counts]
    assert batch.starts.tolist() == np.cumsum([0] + [len(c) for c in documents[:-1]]).tolist()
    assert han_features(batch.features).tolist() == [is_han_feature(f) for f in batch.features]
    with pytest.raises(ValueError, match="needs features"):
        FeatureBatch.of([documents[0], {}])


def test_bit_sums_from_distinct_hashes_equal_those_from_each_occurrence() -> None:
    """``feature=``: hashes per distinct feature, gathered by number, give the same bits."""
    fingerprinter = Fingerprinter(version=3)
    batch = FeatureBatch.of([fingerprinter.feature_counts(t) for t in ENGLISH + CHINESE])
    weights = fingerprinter._batch_weights(batch)
    distinct = [feature_hashes(batch.features, seed) for seed in (0, 1, 2, 3)]
    han = han_features(batch.features)
    n = len(ENGLISH + CHINESE)
    for background in (None, NARROW_BG, WIDE_BG):
        each = weighted_signatures([h[batch.feature] for h in distinct], weights, batch.doc_index, n, background, han[batch.feature])
        assert weighted_signatures(distinct, weights, batch.doc_index, n, background, han, feature=batch.feature) == each
        assert weighted_fingerprints(distinct[0], weights, batch.doc_index, n, background, han, batch.feature) == [s.words[0] for s in each]
