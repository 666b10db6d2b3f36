"""Backgrounds: fingerprint bits centred on a table's own text (issue 8, balanced bits).

The centred rule is checked against an independent implementation written here with Python
integers (no numpy, no shared helper), a pinned fingerprint keeps the compatibility promise, and
a synthetic corpus whose common words lean every bit shows that fitting balances them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import xxhash

from simsql import Fingerprinter
from simsql.errors import ConfigMismatch
from simsql.text.background import CENTRE_SCALE, MIN_DOCUMENTS, Background
from simsql.text.bitsums import _centred_signs
from simsql.text.tokenize import is_han_feature

BASE = Fingerprinter()
LATIN = tuple((37 * i) % 601 - 300 for i in range(64))
HAN = tuple(250 - (53 * i) % 503 for i in range(64))
FIXED = Background(LATIN, HAN, BASE.config_id)

MIXED = "Replication lag in PostgreSQL 复制延迟的监控与告警 uses pg_stat_replication 和 WAL 发送进程。"


def reference(text: str, fingerprinter: Fingerprinter, background: Background) -> int:
    """Bit i is set when 4096 * V_i > W_latin * c_latin_i + W_han * c_han_i, in Python ints."""
    counts = fingerprinter.feature_counts(text)
    weights = [int(w) for w in fingerprinter._weights(counts)]
    fingerprint = 0
    for bit in range(64):
        score = 0
        for (feature, _), weight in zip(counts.items(), weights):
            sign = 1 if (xxhash.xxh3_64_intdigest(feature, fingerprinter.seed) >> bit) & 1 else -1
            centre = background.han[bit] if is_han_feature(feature) else background.latin[bit]
            score += CENTRE_SCALE * sign * weight - weight * centre
        fingerprint |= (score > 0) << bit
    return fingerprint


def synthetic(count: int, seed: int) -> list[str]:
    """Documents of a corpus that repeats its own jargon: every document holds most of 40 common
    words (a domain's "file", "option"), which lean every bit the same way, plus rare words."""
    rng = random.Random(seed)
    jargon = [f"jargon{i}" for i in range(40)]
    out = []
    for _ in range(count):
        words = [w for w in jargon if rng.random() < 0.8] * 3
        words += [f"rare{rng.randrange(10**6)}" for _ in range(rng.randrange(30, 80))]
        rng.shuffle(words)
        out.append(" ".join(words))
    return out


def leans(fingerprinter: Fingerprinter, texts: list[str]) -> np.ndarray:
    """|P(bit set) - 1/2| per bit over ``texts``."""
    fps = fingerprinter.fingerprint_many(texts)
    bits = np.array([[(fp >> i) & 1 for i in range(64)] for fp in fps])  # type: ignore[operator]
    return np.abs(bits.mean(axis=0) - 0.5)


# -- the rule -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [MIXED, "plain english words only, nothing else at all", "只有中文的句子，没有别的文字。", "x"],
    ids=["mixed", "latin", "han", "one-word"],
)
def test_centred_fingerprints_equal_an_independent_integer_implementation(text: str) -> None:
    centred = Fingerprinter(background=FIXED)
    assert centred.fingerprint(text) == reference(text, BASE, FIXED)
    assert centred.fingerprint_many([text, "", text], empty="none") == [reference(text, BASE, FIXED), None, reference(text, BASE, FIXED)]


def test_a_zero_background_changes_nothing_but_the_config_id() -> None:
    zero = Fingerprinter(background=Background([0] * 64, [0] * 64, BASE.config_id))
    texts = [MIXED, "another text about vacuum and the buffer cache", "第三个文档"]
    assert zero.fingerprint_many(texts) == BASE.fingerprint_many(texts)
    assert zero.config_id != BASE.config_id


def test_pinned_fingerprint_and_config_id() -> None:
    """The compatibility promise: these values never change for this text and background."""
    centred = Fingerprinter(background=FIXED)
    assert centred.fingerprint(MIXED) == reference(MIXED, BASE, FIXED)
    assert centred.config_id == PINNED_CONFIG_ID
    assert centred.fingerprint(MIXED) == PINNED_FINGERPRINT


PINNED_CONFIG_ID = "sh2-da799b0b1d11"
PINNED_FINGERPRINT = 0x1B5EF21A17F717EE


def test_heavy_documents_are_compared_with_python_integers() -> None:
    """Totals past int64's exact reach take the Python-integer path and agree with it."""
    rng = np.random.default_rng(3)
    weight = np.array([[2.0**51, 2.0**50], [1000.0, 0.0]])
    signed = np.stack([rng.integers(-(2**49), 2**49, size=(2, 64)).astype(np.float64), np.zeros((2, 64))])
    signed[1, 0] = rng.integers(-1000, 1000, size=64)
    expected = []
    for row in range(2):
        bits = 0
        for i in range(64):
            v = int(signed[row, 0, i]) + int(signed[row, 1, i])
            score = CENTRE_SCALE * v - int(weight[row, 0]) * LATIN[i] - int(weight[row, 1]) * HAN[i]
            bits |= (score > 0) << i
        expected.append(bits)
    assert _centred_signs(signed, weight, FIXED) == expected


# -- fitting ------------------------------------------------------------------------------


def test_fitting_on_a_sample_balances_the_bits_of_the_rest() -> None:
    sample, later = synthetic(400, seed=1), synthetic(600, seed=2)
    background = Background.fit(sample)
    assert background.documents == 400 and background.fitted_for == BASE.config_id
    plain, centred = leans(BASE, later), leans(Fingerprinter(background=background), later)
    assert plain.mean() > 0.15, "the synthetic corpus should lean (else this test proves nothing)"
    assert centred.mean() < 0.06 and centred.max() < 0.15


def test_fit_skips_empty_texts_and_refuses_too_few() -> None:
    texts = synthetic(MIN_DOCUMENTS - 1, seed=4)
    with pytest.raises(ValueError, match=f"at least {MIN_DOCUMENTS} texts"):
        Background.fit(texts + ["", "  ", "!!!"] * 10)
    assert Background.fit(texts + ["one more text", ""]).documents == MIN_DOCUMENTS


@pytest.mark.parametrize("bad", [None, b"bytes", 42])
def test_fit_refuses_non_text(bad: object) -> None:
    with pytest.raises(TypeError, match="str"):
        Background.fit(synthetic(150, seed=5) + [bad])  # type: ignore[list-item]


def test_a_script_seen_too_rarely_is_not_centred() -> None:
    background = Background.fit(synthetic(200, seed=6))
    assert background.han == (0,) * 64 and any(background.latin)


def test_fit_ignores_the_given_fingerprinters_own_background() -> None:
    texts = synthetic(150, seed=7)
    assert Background.fit(texts, Fingerprinter(background=FIXED)) == Background.fit(texts)


# -- identity, refusal, files -------------------------------------------------------------


def test_a_background_fitted_for_other_settings_is_refused() -> None:
    background = Background.fit(synthetic(150, seed=8), Fingerprinter(shingle_size=2))
    with pytest.raises(ConfigMismatch, match="fitted for configuration"):
        Fingerprinter(background=background)
    assert Fingerprinter(shingle_size=2, background=background).config_id != Fingerprinter(shingle_size=2).config_id


def test_settings_round_trip_and_unchanged_identity_without_one() -> None:
    centred = Fingerprinter(background=FIXED)
    assert "background" not in BASE.settings
    rebuilt = Fingerprinter.from_settings(json.loads(json.dumps(centred.settings)))
    assert rebuilt == centred and rebuilt.config_id == centred.config_id
    other = Fingerprinter(background=Background((1,) + LATIN[1:], HAN, BASE.config_id))
    assert other.config_id != centred.config_id


def test_save_and_load(tmp_path: Path) -> None:
    path = tmp_path / "articles.background.json"
    fitted = Background.fit(synthetic(150, seed=9))
    fitted.save(path)
    loaded = Background.load(path)
    assert loaded == fitted and loaded.documents == 150 and loaded.digest == fitted.digest
    (tmp_path / "idf.json").write_text(json.dumps({"format": "simsql-idf", "idf": {}}))
    with pytest.raises(ValueError, match="not a simsql background"):
        Background.load(tmp_path / "idf.json")
    (tmp_path / "junk.json").write_bytes(b"\x00\xff not json")
    with pytest.raises(ValueError, match="not a simsql background"):
        Background.load(tmp_path / "junk.json")


@pytest.mark.parametrize(
    ("latin", "error"),
    [
        ([0] * 63, ValueError),
        ([CENTRE_SCALE + 1] + [0] * 63, ValueError),
        ([True] + [0] * 63, TypeError),
        ([0.5] + [0] * 63, TypeError),
        ("0" * 64, TypeError),
    ],
    ids=["short", "past-scale", "bool", "float", "str"],
)
def test_bad_centres_are_refused(latin: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        Background(latin, HAN, BASE.config_id)  # type: ignore[arg-type]


def test_wrong_background_type_is_refused() -> None:
    with pytest.raises(TypeError, match="Background"):
        Fingerprinter(background={"latin": LATIN})  # type: ignore[arg-type]


def test_is_han_feature() -> None:
    assert [is_han_feature(f.encode()) for f in ("复制", "㐀", "word", "ß", "カタ", "한국", "𠀀")] == [
        True, True, False, False, False, False, True,
    ]  # fmt: skip


def test_a_mixed_table_centres_each_language_on_its_own_documents() -> None:
    """Chinese documents carry English words of their own ("linux", "-f"), leaning differently
    from English documents: the Latin centre must come from the English documents, or English
    documents are centred on neither (measured: 62.6 instead of 64.0 bits on real text)."""
    rng = random.Random(11)

    def chinese(i: int) -> str:
        han = "".join(rng.choice("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严")
        for _ in range(rng.randrange(200, 400)))
        return han + " " + " ".join(f"cmd{rng.randrange(12)}" for _ in range(20))

    english = synthetic(300, seed=12)
    mixed = english + [chinese(i) for i in range(300)]
    rng.shuffle(mixed)
    centred = Fingerprinter(background=Background.fit(mixed))
    later_english, later_chinese = synthetic(400, seed=13), [chinese(i) for i in range(400)]
    assert leans(BASE, later_english).mean() > 0.15
    assert leans(centred, later_english).mean() < 0.06
    assert leans(centred, later_chinese).mean() < 0.06
