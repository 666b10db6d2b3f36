"""Algorithm version 3: version 2's features, weights and 64-bit fingerprint, plus the wide
256-bit signature as part of the configuration (issue 22).

The golden values below were computed once and are asserted forever: a stored v3 table holds
these words and blocks, so a change here is a compatibility break, not a test to update.
"""

from __future__ import annotations

import pytest

from simsql import Fingerprinter
from simsql.errors import ConfigMismatch
from simsql.fingerprint import Background
from simsql.schema.names import WIDE_LAYOUT
from simsql.text.fingerprint import ALGORITHM_VERSION, DEFAULT, DEFAULT_WIDE, WIDE_VERSION

ENGLISH = (
    "Replication slots make the primary keep write-ahead log until every standby has received it, "
    "so a standby that falls behind never needs a base backup again."
)
CHINESE = "逻辑复制使用发布和订阅模型，订阅者从发布者那里获取数据变更，并按照事务提交的顺序应用这些变更。"
MIXED = "PostgreSQL 的 VACUUM 命令回收死元组占用的空间, and ANALYZE updates the planner statistics."

GOLDEN_CONFIG_IDS = {
    "v3 default": (DEFAULT_WIDE, "sh3-5dc07973de7d"),
    "v3 shingle3": (Fingerprinter(version=3, shingle_size=3), "sh3-01e78afb6703"),
    "v3 seed7": (Fingerprinter(version=3, seed=7), "sh3-acb4cf4fe139"),
}

GOLDEN_WORDS = {
    (0, ENGLISH): (0x36C32C1A1C9C23DF, 0xD491873868C75099, 0xCDF23370C633D693, 0x8F6682D11A82C0C3),
    (7, ENGLISH): (0x2D0F62C6A304B44A, 0x3B4BF92812AD38BE, 0x592F592E0109B6A4, 0xB2C6069ACA3DA906),
    (0, CHINESE): (0xFBC3874F63112A6C, 0xA59946D79B425121, 0x9A54C2FC5E4CE22B, 0x4EE8B57D72B37153),
    (7, CHINESE): (0xE481669523D5D8B9, 0x46764EE953F77959, 0x40651FB82D53BFBB, 0x7FF71F7DF482BD18),
    (0, MIXED): (0x29FE5777F8E56DC0, 0xC4E6333F24F11655, 0xD651995752209C48, 0x056CB3113BED0EC6),
    (7, MIXED): (0xC99506ECADCD1C0D, 0x5BA49F60158D65EA, 0x9286A3C1F318FEBC, 0xC78C26F114301E07),
}

# The 8 x 20-bit blocks a v3 table stores and indexes (derived by the database from the words).
GOLDEN_BLOCKS = {
    ENGLISH: (795615, 106953, 443180, 330131, 551111, 596083, 431060, 811837),
    CHINESE: (76396, 325169, 770951, 332319, 498498, 627821, 142245, 386254),
}


def test_version_3_is_named_and_the_plain_default_stays_version_2() -> None:
    assert (ALGORITHM_VERSION, WIDE_VERSION) == (2, 3)
    assert DEFAULT.version == 2 and not DEFAULT.wide
    assert DEFAULT_WIDE.version == 3 and DEFAULT_WIDE.wide
    assert DEFAULT_WIDE.settings == DEFAULT.settings | {"algorithm": 3, "signature_bits": 256}


@pytest.mark.parametrize("name", GOLDEN_CONFIG_IDS)
def test_golden_config_ids(name: str) -> None:
    fingerprinter, config_id = GOLDEN_CONFIG_IDS[name]
    assert fingerprinter.config_id == config_id
    assert Fingerprinter.from_settings(fingerprinter.settings) == fingerprinter


@pytest.mark.parametrize(("seed", "text"), GOLDEN_WORDS, ids=[f"seed{s}-{t[:8]}" for s, t in GOLDEN_WORDS])
def test_golden_signatures(seed: int, text: str) -> None:
    v3 = Fingerprinter(version=3, seed=seed)
    signature = v3.signature(text)
    assert signature.words == GOLDEN_WORDS[seed, text]
    # word 0 is the 64-bit fingerprint, and that is version 2's bit for bit
    assert signature.words[0] == v3.fingerprint(text) == Fingerprinter(seed=seed).fingerprint(text)


@pytest.mark.parametrize("text", GOLDEN_BLOCKS, ids=["english", "chinese"])
def test_golden_blocks(text: str) -> None:
    assert DEFAULT_WIDE.signature(text).blocks(WIDE_LAYOUT) == GOLDEN_BLOCKS[text]


def test_a_version_2_background_serves_version_3_and_another_is_refused() -> None:
    v2_background = Background(tuple(range(-32, 32)), tuple(range(31, -33, -1)), DEFAULT.config_id)
    centred = Fingerprinter(version=3, background=v2_background)
    assert centred.fingerprint(ENGLISH) == Fingerprinter(background=v2_background).fingerprint(ENGLISH)
    assert Fingerprinter.from_settings(centred.settings) == centred
    other = Background(tuple(range(-32, 32)), tuple(range(31, -33, -1)), Fingerprinter(version=3, seed=7).config_id)
    with pytest.raises(ConfigMismatch, match="fitted for"):
        Fingerprinter(version=3, background=other)


def test_version_4_does_not_exist() -> None:
    with pytest.raises(ValueError, match=r"one of \(1, 2, 3\)"):
        Fingerprinter(version=4)
