"""The fingerprint engine: golden vectors, a slow reference, determinism, seeds, bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

import simsql
import simsql.bits
import simsql.errors
import simsql.text.fingerprint
from simsql import EmptyDocument, Fingerprinter
from simsql.fingerprint import IdfTable
from simsql.text import tokenize

TEXTS = {
    "en_short": "Shakespeare produced most of his known work between 1589 and 1613",
    "en_para": "PostgreSQL is a powerful, open source object-relational database system with over 35 "
    "years of active development that has earned it a strong reputation for reliability, feature "
    "robustness, and performance.",
    "zh": "你妈妈喊你回家吃饭哦，回家罗回家罗",
    "zh_long": "美国“51区”雇员称内部有9架飞碟，曾看见灰色外星人",
    "mixed": "SimHash 是 Google 用来处理海量网页去重的算法, it maps documents to 64-bit fingerprints.",
    "fullwidth": "ＡＢＣ Ｄｅｆ ﬁle",
    "accents": "Ça coûte très cher à Paris, naïve café",
}

# Version 1 (simsql 0.1's defaults), named explicitly: its fingerprints and config ids must never
# change, so tables filled before the defaults changed keep working.
CONFIGS = {
    "v1 default": Fingerprinter(version=1),
    "v1 shingle3": Fingerprinter(version=1, shingle_size=3),
    "v1 chars4": Fingerprinter(version=1, tokenizer="chars"),
    "v1 count": Fingerprinter(version=1, weighting="count"),
    "v1 bigrams": Fingerprinter(version=1, chinese="bigrams"),
    "v1 seed7": Fingerprinter(version=1, seed=7),
}

# Pinned outputs. A change here breaks every fingerprint stored by users: if a test below fails,
# the change is a compatibility break, not a test to update.
GOLDEN = {
    ("v1 default", "en_short"): 0x77E885AF50F81792,
    ("v1 default", "en_para"): 0x1227B3022390809E,
    ("v1 default", "zh"): 0x9471B4FA97FAAF5C,
    ("v1 default", "zh_long"): 0x9A947E2C0A72A3B0,
    ("v1 default", "mixed"): 0x9F7396A8270E9CA8,
    ("v1 default", "fullwidth"): 0x38AE579EE9BEF180,
    ("v1 default", "accents"): 0xCE03EC9084813868,
    ("v1 shingle3", "en_short"): 0xD0750EE3F3EA273F,
    ("v1 shingle3", "en_para"): 0xC1AAB55862DB5588,
    ("v1 shingle3", "zh"): 0xF7A6FBF419EA9C02,
    ("v1 shingle3", "mixed"): 0x8C235D11AFCD30E4,
    ("v1 chars4", "en_short"): 0x26008249749E60E2,
    ("v1 chars4", "en_para"): 0x9658D61050C946D1,
    ("v1 chars4", "zh"): 0x30050CE6B24C4AAD,
    ("v1 chars4", "mixed"): 0x0323114928196AC0,
    ("v1 bigrams", "zh"): 0x90374EDA27F48F7D,
    ("v1 bigrams", "mixed"): 0x97D184A86F629CB8,
    ("v1 seed7", "en_short"): 0x117A7F830BA998DE,
    ("v1 seed7", "zh"): 0x2DF5BBE9F5057423,
    ("v1 count", "en_para"): 0x1226B2020390809E,
}

GOLDEN_CONFIG_IDS = {
    "v1 default": "sh1-7b6629fcb08f",
    "v1 shingle3": "sh1-7fb62246438d",
    "v1 chars4": "sh1-a56193856739",
    "v1 count": "sh1-bd5c20d1de22",
    "v1 bigrams": "sh1-e58d15de88a0",
    "v1 seed7": "sh1-03402e0eceab",
}


# Version 2, the current defaults (ALGORITHM_VERSION = 2): pinned the same way.
V2_IDF = IdfTable({"postgresql": 9.5, "database": 4.0, "the": 0.5, "回家": 6.0}, default=8.0)
CONFIGS |= {
    "v2 default": Fingerprinter(),
    "v2 shingle3": Fingerprinter(shingle_size=3),
    "v2 jieba": Fingerprinter(chinese="jieba"),
    "v2 log": Fingerprinter(weighting="log"),
    "v2 idf": Fingerprinter(weighting=V2_IDF),
}
GOLDEN |= {
    ("v2 default", "en_short"): 0x76E884AF58F91792,
    ("v2 default", "en_para"): 0x132FF3020391209A,
    ("v2 default", "zh"): 0x90374EDA27F48F7D,
    ("v2 default", "zh_long"): 0xE2982D0408728784,
    ("v2 default", "mixed"): 0xFFD501A67F629C98,
    ("v2 default", "fullwidth"): 0x38AE579EE9BEF180,
    ("v2 default", "accents"): 0xCE03EC9084813868,
    ("v2 shingle3", "en_short"): 0xD0750EE3F3EA273F,
    ("v2 shingle3", "en_para"): 0xC1AAB55862DB5588,
    ("v2 shingle3", "zh"): 0x9428224C00FA8587,
    ("v2 shingle3", "mixed"): 0x01534D48A0FD0492,
    ("v2 jieba", "zh"): 0x9471B4DAB6FAAF5C,
    ("v2 jieba", "mixed"): 0xFFB193B8264E9CD8,
    ("v2 log", "en_para"): 0x1227B3022390809E,
    ("v2 log", "zh"): 0x90374EDA27F48F7D,
    ("v2 idf", "en_para"): 0x5226B2020390C09E,
    ("v2 idf", "zh"): 0x90374EDA27F48F7D,
}
GOLDEN_CONFIG_IDS |= {
    "v2 default": "sh2-9757c6571aec",
    "v2 shingle3": "sh2-0ed47f9c94d1",
    "v2 jieba": "sh2-21978419d0ee",
    "v2 log": "sh2-f05ee6338cda",
    "v2 idf": "sh2-f816729786c7",
}


@pytest.mark.parametrize(("config", "text"), sorted(GOLDEN))
def test_golden_vectors(config: str, text: str) -> None:
    assert CONFIGS[config].fingerprint(TEXTS[text]) == GOLDEN[(config, text)]


@pytest.mark.parametrize("config", sorted(GOLDEN_CONFIG_IDS))
def test_golden_config_ids(config: str) -> None:
    assert CONFIGS[config].config_id == GOLDEN_CONFIG_IDS[config]


def test_config_id_tracks_every_setting() -> None:
    ids = {c.config_id for c in CONFIGS.values()}
    assert len(ids) == len(CONFIGS)
    assert Fingerprinter().config_id == Fingerprinter().config_id
    assert hash(Fingerprinter()) == hash(Fingerprinter())


def test_config_id_tracks_idf_content() -> None:
    a = IdfTable({"x": 1.0}, default=2.0)
    b = IdfTable({"x": 1.5}, default=2.0)
    assert Fingerprinter(weighting=a).config_id != Fingerprinter(weighting=b).config_id
    assert Fingerprinter(weighting=a).config_id == Fingerprinter(weighting=IdfTable({"x": 1.0}, 2.0)).config_id


def test_config_id_tracks_jieba_version(monkeypatch: pytest.MonkeyPatch) -> None:
    before = Fingerprinter(shingle_size=2, chinese="jieba").config_id
    monkeypatch.setattr(tokenize, "jieba_version", lambda: "9.9.9")
    assert Fingerprinter(shingle_size=2, chinese="jieba").config_id != before


def reference_simhash(fingerprinter: Fingerprinter, text: str) -> int:
    """The textbook loop over 64 bits, with the same features and quantized weights."""
    counts: Counter[bytes] = fingerprinter._feature_counts(text)
    weights = fingerprinter._weights(counts)
    sums = [0.0] * 64
    for feature, weight in zip(counts, weights):
        h = xxhash.xxh3_64_intdigest(feature, fingerprinter.seed)
        for bit in range(64):
            sums[bit] += weight if (h >> bit) & 1 else -weight
    return sum(1 << bit for bit in range(64) if sums[bit] > 0)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_vectorised_sum_equals_textbook_loop(config: str) -> None:
    fp = CONFIGS[config]
    for text in TEXTS.values():
        assert fp.fingerprint(text) == reference_simhash(fp, text)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=200), min_size=1, max_size=20))
def test_fingerprint_many_equals_one_by_one(texts: list[str]) -> None:
    fp = Fingerprinter()
    many = fp.fingerprint_many(texts, empty="none")
    for text, value in zip(texts, many):
        if value is None:
            with pytest.raises(EmptyDocument):
                fp.fingerprint(text)
        else:
            assert value == fp.fingerprint(text) == reference_simhash(fp, text)


@pytest.mark.parametrize("config", ["v1 default", "v1 shingle3", "v1 chars4", "v2 default", "v2 shingle3"])
def test_chunking_does_not_change_output(config: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = " ".join(TEXTS.values()) * 5
    whole = CONFIGS[config].fingerprint(text)
    monkeypatch.setattr(tokenize, "CHUNK_CHARS", 37)
    assert CONFIGS[config].fingerprint(text) == whole


def test_deterministic_across_processes_and_hash_seeds() -> None:
    code = (
        "import sys; from simsql.text.fingerprint import simhash;"
        "print(simhash(sys.argv[1]), simhash(sys.argv[2]), simhash(sys.argv[3], shingle_size=3))"
    )
    args = [TEXTS["en_para"], TEXTS["mixed"], TEXTS["zh"]]
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        result = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True)
        outputs.add(result.stdout)
    assert len(outputs) == 1
    assert outputs.pop().split()[0] == str(GOLDEN[("v2 default", "en_para")])


# -- the seeds' worked examples -------------------------------------------------------------


def test_seed_six_bit_example() -> None:
    """Seed 001: 美国 hashes to 100101 with weight 4, 51区 to 101011 with weight 5: sums
    9 -9 1 -1 1 9, signature 101011."""
    six_bit = {"美国": 0b100101, "51区": 0b101011}
    assert simsql.text.fingerprint.simhash_features({"美国": 4, "51区": 5}, hash_function=six_bit.__getitem__) == 0b101011
    assert simsql.text.fingerprint.simhash_features([("美国", 4), ("51区", 5)], hash_function=six_bit.__getitem__) == 0b101011
    # With 51区 lighter than 美国 the middle bits follow 美国 instead.
    assert simsql.text.fingerprint.simhash_features({"美国": 5, "51区": 4}, hash_function=six_bit.__getitem__) == 0b100101


def test_seed_chinese_pair_is_closer_than_unrelated() -> None:
    a = simsql.text.fingerprint.simhash("你妈妈喊你回家吃饭哦，回家罗回家罗")
    b = simsql.text.fingerprint.simhash("你妈妈叫你回家吃饭啦，回家罗回家罗")
    unrelated = simsql.text.fingerprint.simhash("美国“51区”雇员称内部有9架飞碟，曾看见灰色外星人")
    assert simsql.bits.hamming(a, b) < simsql.bits.hamming(a, unrelated)
    assert simsql.bits.hamming(a, b) < simsql.bits.hamming(b, unrelated)


def test_seed_shakespeare_pair_is_closer_than_unrelated() -> None:
    a = simsql.text.fingerprint.simhash("Shakespeare produced most of his known work between 1589 and 1613")
    b = simsql.text.fingerprint.simhash("Shakespeare produced most of his work after 1589")
    unrelated = simsql.text.fingerprint.simhash("The committee approved the new budget for public transport on Tuesday")
    assert simsql.bits.hamming(a, b) < simsql.bits.hamming(a, unrelated)
    assert simsql.bits.hamming(a, b) < simsql.bits.hamming(b, unrelated)


def test_short_chinese_text_is_segmented() -> None:
    features = Fingerprinter(chinese="jieba").features("我是中国人")
    assert len(features) >= 3
    assert "中国" in features
    assert len(Fingerprinter(chinese="bigrams").features("我是中国人")) == 4


def test_mixed_script_dispatch() -> None:
    features = Fingerprinter().features("SimHash 是 Google 的算法 Café")
    assert {"simhash", "google", "café", "算法"} <= set(features)


def test_normalisation_nfkc_and_casefold() -> None:
    assert simsql.text.fingerprint.simhash("ＳＴＲＡＳＳＥ ﬁle") == simsql.text.fingerprint.simhash("strasse file")
    assert simsql.text.fingerprint.simhash("Straße FILE") == simsql.text.fingerprint.simhash("strasse file")


def test_weighting_changes_output_but_is_deterministic() -> None:
    text = TEXTS["en_para"] + " performance performance performance"
    counted = Fingerprinter(weighting="count").fingerprint(text)
    logged = Fingerprinter(weighting="log").fingerprint(text)
    assert counted != logged
    assert Fingerprinter(weighting="log").fingerprint(text) == logged


def test_jieba_idf_weighting() -> None:
    fp = Fingerprinter(weighting="jieba_idf", chinese="jieba")
    value = fp.fingerprint(TEXTS["zh_long"])
    assert value == fp.fingerprint(TEXTS["zh_long"])
    assert value != Fingerprinter().fingerprint(TEXTS["zh_long"])


def test_private_jieba_ignores_global_user_words() -> None:
    import jieba

    before = Fingerprinter(chinese="jieba").fingerprint(TEXTS["zh_long"])
    jieba.add_word("灰色外星人")
    try:
        assert Fingerprinter(chinese="jieba").fingerprint(TEXTS["zh_long"]) == before
    finally:
        jieba.del_word("灰色外星人")


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   \n\t ", "!!! ... ---", "🎉🎉🎉", "\x00\x01\x02"])
def test_text_without_features_is_refused(text: str) -> None:
    with pytest.raises(EmptyDocument):
        simsql.text.fingerprint.simhash(text)
    assert Fingerprinter().fingerprint_many([text, "real words"], empty="none")[0] is None


@pytest.mark.parametrize("bad", [None, b"bytes", bytearray(b"x"), 42, ["list"]])
def test_non_str_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError, match="str"):
        simsql.text.fingerprint.simhash(bad)  # type: ignore[arg-type]


def test_hostile_characters_do_not_crash() -> None:
    for text in ["\ud800 lone surrogate \udfff", "emoji 😀 inside words", "ctrl\x07chars\x1b[0m", "\ufeffbom"]:
        assert 0 <= simsql.text.fingerprint.simhash(text) < 2**64


def test_huge_document() -> None:
    text = (TEXTS["en_para"] + " ") * 50_000  # about 11 MB
    assert len(text) > 10_000_000
    assert simsql.text.fingerprint.simhash(text) == simsql.text.fingerprint.simhash(TEXTS["en_para"])  # same proportions of words


def test_invalid_configuration() -> None:
    with pytest.raises(ValueError):
        Fingerprinter(bits=32)
    with pytest.raises(ValueError):
        Fingerprinter(tokenizer="sentences")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Fingerprinter(shingle_size="3")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Fingerprinter(weighting="tfidf")  # type: ignore[arg-type]


def test_simhash_features_bad_input() -> None:
    with pytest.raises(EmptyDocument):
        simsql.text.fingerprint.simhash_features({})
    with pytest.raises(EmptyDocument):
        simsql.text.fingerprint.simhash_features({"a": 0})
    with pytest.raises(ValueError):
        simsql.text.fingerprint.simhash_features({"a": -1})
    with pytest.raises(ValueError):
        simsql.text.fingerprint.simhash_features({"a": float("nan")})
    with pytest.raises(TypeError):
        simsql.text.fingerprint.simhash_features({1: 1.0})  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        simsql.text.fingerprint.simhash_features({"a": 1}, hash_function=lambda f: -1)


def test_idf_table_fit_save_load(tmp_path) -> None:
    corpus = ["the cat sat on the mat", "the dog sat on the log", "a bird flew over the house"]
    table = IdfTable.fit(corpus)
    assert table.documents == 3
    assert table.get("the") < table.get("cat") < table.get("never-seen-word") + 1e-9
    path = tmp_path / "idf.json"
    table.save(path)
    loaded = IdfTable.load(path)
    assert loaded == table
    fp = Fingerprinter(weighting=loaded)
    assert fp.fingerprint("the cat and the dog") == Fingerprinter(weighting=table).fingerprint("the cat and the dog")
    bad = tmp_path / "bad.json"
    bad.write_text('{"something": "else"}')
    with pytest.raises(ValueError, match="not a simsql IDF table"):
        IdfTable.load(bad)


# -- issue 9 item 10: shingles across chunks of different scripts ----------------------------


def test_shingles_across_an_ascii_chunk_keep_non_ascii_words(monkeypatch: pytest.MonkeyPatch) -> None:
    """Non-ASCII words, then a chunk of punctuation with almost no words, then more non-ASCII
    words: the carried-over words crossed the ASCII chunk as UTF-8 bytes and were decoded as
    ASCII (UnicodeDecodeError, which would stop a backfill at its batch)."""
    gap = "!" * (tokenize.CHUNK_CHARS + 10)
    text = f"café naïve {gap} x {gap} über straße résumé"
    fp = Fingerprinter(shingle_size=3)
    chunked = fp.fingerprint(text)
    monkeypatch.setattr(tokenize, "CHUNK_CHARS", 10**9)
    assert chunked == fp.fingerprint(text)
    assert "naïve x über" in fp.features(text)


# -- layering, versions, the built-in prior ---------------------------------------------------


def _imported_modules(path: str) -> set[str]:
    import ast

    tree = ast.parse(open(path, encoding="utf-8").read())
    names: set[str] = set()
    for node in ast.walk(tree):  # every import, also lazy ones inside functions
        if isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("module", ["weighting", "tokenize", "bits"])
def test_lower_layers_never_import_the_fingerprinter(module: str) -> None:
    path = os.path.join(os.path.dirname(simsql.__file__), "text", f"{module}.py")
    assert not {m for m in _imported_modules(path) if "fingerprint" in m}


def test_version_1_is_simsql_0_1_when_named() -> None:
    old = Fingerprinter(version=1)
    assert old.weighting == "log" and old.config_id == "sh1-7b6629fcb08f"
    assert Fingerprinter().version == 2 and Fingerprinter().weighting == "prior"
    assert Fingerprinter().chinese == "bigrams" and old.chinese == "jieba"
    assert Fingerprinter().config_id.startswith("sh2-")
    assert Fingerprinter(version=1) != Fingerprinter()
    with pytest.raises(ValueError, match="version"):
        Fingerprinter(version=4)
    with pytest.raises(ValueError, match="version 1"):
        Fingerprinter(version=1, weighting="prior")


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_settings_rebuild_the_same_configuration(config: str) -> None:
    fp = CONFIGS[config]
    table = fp.weighting if isinstance(fp.weighting, IdfTable) else None
    rebuilt = Fingerprinter.from_settings(fp.settings, weighting=table)
    assert rebuilt == fp and rebuilt.config_id == fp.config_id


def test_settings_from_another_simsql_are_refused() -> None:
    newer = dict(Fingerprinter().settings, algorithm=99)
    with pytest.raises(simsql.text.errors.ConfigMismatch, match="cannot rebuild"):
        Fingerprinter.from_settings(newer)
    other_prior = dict(Fingerprinter().settings, weighting="prior:0000")
    with pytest.raises(simsql.text.errors.ConfigMismatch, match="differs"):
        Fingerprinter.from_settings(other_prior)
    with pytest.raises(simsql.text.errors.ConfigMismatch, match="IdfTable"):
        Fingerprinter.from_settings(CONFIGS["v2 idf"].settings)


def test_prior_file_is_pinned() -> None:
    import gzip
    import hashlib
    from importlib import resources

    from simsql.text import weighting
    raw = gzip.decompress(resources.files("simsql").joinpath("data/prior-1.tsv.gz").read_bytes())
    assert hashlib.sha256(raw).hexdigest() == weighting.PRIOR_SHA256
    idf = weighting.prior_idf()
    assert idf.get("the") < idf.get("system") < idf.get("never-seen-word")
    assert idf.get("的") < idf.get("系统") < idf.get("从未见过的词")
    weights = weighting.prior_table()
    assert weights.get("the") == weighting.PRIOR_FLOOR
    assert weights.get("system") == weights.get("never-seen-word") == 2.0
