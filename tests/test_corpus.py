"""Fast checks of the benchmark corpus (benchmarks/corpus.py) and planted edits (edits.py).

They read a few dozen man pages (rendered on the fly when the cache is absent), and skip with
the install command when the Debian man pages are not on the machine.
"""

from __future__ import annotations

import dataclasses
import difflib
import random
import sys
from collections import Counter
from pathlib import Path

import pytest

# `pytest` (unlike `python -m pytest`) does not put the repository root on sys.path, and the
# benchmarks are not part of the installed package.
_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from benchmarks import corpus, manpages, neardup  # noqa: E402
from benchmarks.corpus import (  # noqa: E402
    CorpusUnavailable,
    Document,
    assembled_articles,
    chinese_documents,
    english_documents,
    family,
    is_chinese,
    paragraphs,
)
from benchmarks.edits import (  # noqa: E402
    RATES,
    Pair,
    add_boilerplate,
    delete_words,
    edit_words,
    insert_words,
    planted_pairs,
    reorder_sentences,
    substitute_words,
    units,
)

pytestmark = pytest.mark.harness  # the benchmarks' corpus and edits: no server involved

N_EN = 40
N_ZH = 20


def _load(loader, limit: int) -> list[Document]:
    try:
        return loader(limit=limit)
    except CorpusUnavailable as exc:
        pytest.skip(f"benchmark corpus unavailable: {exc}")


@pytest.fixture(scope="module")
def en_docs() -> list[Document]:
    return _load(english_documents, N_EN)


@pytest.fixture(scope="module")
def zh_docs() -> list[Document]:
    return _load(chinese_documents, N_ZH)


@pytest.fixture(scope="module")
def long_en(en_docs: list[Document]) -> str:
    # Enough words that a 1% rate means several edits, few enough to keep difflib fast.
    doc = max(en_docs, key=lambda d: len(d.text))
    return " ".join(doc.text.split(" ")[:3000])


@pytest.fixture(scope="module")
def long_zh(zh_docs: list[Document]) -> str:
    return max(zh_docs, key=lambda d: len(d.text)).text[:8000]


def _changed_units(a: str, b: str) -> int:
    """Units touched by the edit script difflib finds between a and b."""
    ops = difflib.SequenceMatcher(None, units(a), units(b), autojunk=False).get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in ops if tag != "equal")


# ----------------------------------------------------------------------------- corpus


def test_english_documents_are_clean_sorted_and_long(en_docs: list[Document]) -> None:
    assert len(en_docs) == N_EN
    ids = [d.doc_id for d in en_docs]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    for doc in en_docs:
        assert doc.doc_id.startswith("en/man")
        assert len(doc.text) >= corpus.MIN_CHARS["en"]
        assert doc.title
        assert "\x08" not in doc.text and "\x1b" not in doc.text  # no overstrike or SGR
        assert not any("\u2500" <= ch <= "\u257f" for ch in doc.text)  # no tbl rules
        assert "  " not in doc.text  # justification spaces collapsed
    with pytest.raises(dataclasses.FrozenInstanceError):
        en_docs[0].text = ""  # type: ignore[misc]


def test_limit_returns_a_prefix_of_the_corpus(en_docs: list[Document]) -> None:
    assert english_documents(limit=5) == en_docs[:5]


def test_chinese_documents_are_chinese(zh_docs: list[Document]) -> None:
    assert len(zh_docs) == N_ZH
    for doc in zh_docs:
        assert doc.doc_id.startswith("zh/man")
        assert len(doc.text) >= corpus.MIN_CHARS["zh"]
        assert is_chinese(doc.text)
        assert "\ufffd" not in doc.text  # decoded, not mojibake


def test_missing_man_pages_raise_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(manpages, "MAN_ROOT", tmp_path / "man")
    monkeypatch.setattr(manpages, "ZH_ROOT", tmp_path / "man" / "zh_CN")
    with pytest.raises(CorpusUnavailable, match="apt-get install -y manpages"):
        english_documents(limit=1, cache_dir=tmp_path)
    with pytest.raises(CorpusUnavailable, match="manpages-zh"):
        chinese_documents(limit=1, cache_dir=tmp_path)


def test_cache_round_trip_matches_uncached_render(
    en_docs: list[Document], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sources = manpages.sources("en")[:24]
    monkeypatch.setattr(corpus, "sources", lambda lang: sources)
    uncached = english_documents(limit=100, cache_dir=tmp_path)  # below limit: no cache written
    assert not (tmp_path / "manpages-en.jsonl").exists()
    meta = corpus.build_cache("en", cache_dir=tmp_path, processes=2)
    assert meta["documents"] == len(uncached) > 0
    assert english_documents(cache_dir=tmp_path) == uncached == en_docs[: len(uncached)]
    assert corpus.build_cache("en", cache_dir=tmp_path)["build_seconds"] == meta["build_seconds"]


def test_paragraphs_are_prose_in_the_documents_language(
    en_docs: list[Document], zh_docs: list[Document]
) -> None:
    en_paras = paragraphs(en_docs)
    zh_paras = paragraphs(zh_docs)
    assert len(en_paras) > len(en_docs) and len(zh_paras) > len(zh_docs)
    assert len(set(en_paras)) == len(en_paras)
    for p in en_paras:
        assert "\n" not in p and len(p) >= 120 and not is_chinese(p)
    for p in zh_paras:
        assert "\n" not in p and len(p) >= 40 and is_chinese(p, threshold=0.5)


def test_assembled_articles_are_deterministic_runs_of_real_paragraphs(
    en_docs: list[Document],
) -> None:
    paras = paragraphs(en_docs)
    first = list(assembled_articles(paras, 5, seed=3))
    assert first == list(assembled_articles(paras, 5, seed=3))
    assert first != list(assembled_articles(paras, 5, seed=4))
    known = set(paras)
    for article in first:
        assert len(article) >= 1500
        parts = article.split("\n\n")
        assert len(parts) >= 2 and all(p in known for p in parts)
    assert len(set(first)) == len(first)


def test_family_groups_by_section_and_stem() -> None:
    assert family("en/man3/pthread_create.3") == family("en/man3/pthread_join.3")
    assert family("en/man3/pthread_create.3") != family("en/man2/pthread_create.2")
    assert family("en/man1/git-log.1") == "en/man1/git"


# ----------------------------------------------------------------------------- edits


@pytest.mark.parametrize("rate", RATES)
def test_substitute_changes_exactly_rate_of_words(long_en: str, rate: float) -> None:
    a, b = units(long_en), units(substitute_words(long_en, rate, random.Random(1)))
    assert len(a) == len(b)
    changed = sum(x != y for x, y in zip(a, b, strict=True))
    assert changed == round(rate * len(a))


@pytest.mark.parametrize("rate", RATES)
def test_insert_and_delete_change_word_count_by_rate(long_en: str, rate: float) -> None:
    n = len(units(long_en))
    k = round(rate * n)
    assert len(units(insert_words(long_en, rate, random.Random(2)))) == n + k
    assert len(units(delete_words(long_en, rate, random.Random(2)))) == n - k


@pytest.mark.parametrize("rate", RATES)
def test_mixed_edit_rate_is_honoured(long_en: str, rate: float) -> None:
    n = len(units(long_en))
    changed = _changed_units(long_en, edit_words(long_en, rate, random.Random(3)))
    # Adjacent edits can merge into one difflib operation, so allow some slack below.
    assert 0.7 * rate * n <= changed <= 1.1 * rate * n + 1


def test_edits_are_deterministic_for_a_seed(long_en: str) -> None:
    for fn in (insert_words, delete_words, substitute_words, edit_words):
        assert fn(long_en, 0.05, random.Random(9)) == fn(long_en, 0.05, random.Random(9))
        assert fn(long_en, 0.05, random.Random(9)) != fn(long_en, 0.05, random.Random(10))
    assert edit_words(long_en, 0.0, random.Random(1)) == long_en


def test_edits_keep_layout(long_en: str) -> None:
    b = edit_words(long_en, 0.05, random.Random(4))
    assert b.count("\n\n") >= long_en.count("\n\n") * 0.9
    assert "  " not in b


@pytest.mark.parametrize("rate", [0.05, 0.20])
def test_chinese_edits_keep_the_text_chinese(long_zh: str, rate: float) -> None:
    n = len(units(long_zh))
    assert n > 100
    for fn in (insert_words, substitute_words, edit_words, delete_words):
        b = fn(long_zh, rate, random.Random(5))
        assert b != long_zh
        assert is_chinese(b)
        changed = _changed_units(long_zh, b)
        # jieba re-segments around an edit, so the measured change is only near the rate.
        assert 0.5 * rate * n <= changed <= 2.5 * rate * n + 2, fn.__name__
    sub = substitute_words(long_zh, rate, random.Random(5))
    new_words = Counter(units(sub)) - Counter(units(long_zh))
    assert new_words and all(neardup.HAN.search(w) for w in new_words)


def test_character_unit_edits_for_chinese(long_zh: str) -> None:
    a = units(long_zh, "char")
    b = units(substitute_words(long_zh, 0.10, random.Random(6), unit="char"), "char")
    assert len(a) == len(b)
    assert sum(x != y for x, y in zip(a, b, strict=True)) == round(0.10 * len(a))


def test_reorder_keeps_paragraphs_and_changes_order(en_docs: list[Document]) -> None:
    text = en_docs[0].text
    b = reorder_sentences(text, random.Random(7))
    assert b != text
    assert Counter(b.split("\n\n")) == Counter(text.split("\n\n"))
    short = "One sentence here. Another one there. A third one. And a fourth."
    for seed in range(20):
        b = reorder_sentences(short, random.Random(seed))
        assert b != short and sorted(b.split(" ")) == sorted(short.split(" "))


def test_boilerplate_wraps_the_text(en_docs: list[Document], zh_docs: list[Document]) -> None:
    en = en_docs[0].text
    b = add_boilerplate(en, random.Random(8))
    assert en in b and b.index(en) > 0
    assert "Recommended for you" in b and "All rights reserved" in b
    assert add_boilerplate(en, random.Random(8)) == b
    titles = ["Alpha article", "Beta article", "Gamma article", "Delta article", "Eps article"]
    assert sum(t in add_boilerplate(en, random.Random(8), titles=titles) for t in titles) >= 3
    zh = zh_docs[0].text
    bz = add_boilerplate(zh, random.Random(8))
    assert zh in bz and "推荐阅读" in bz and "版权声明" in bz and "Recommended" not in bz


# ----------------------------------------------------------------------------- pairs


@pytest.fixture(scope="module")
def pairs(en_docs: list[Document], zh_docs: list[Document]) -> list[Pair]:
    return planted_pairs(en_docs + zh_docs, rng_seed=11, per_kind=2)


def test_planted_pairs_are_deterministic(
    pairs: list[Pair], en_docs: list[Document], zh_docs: list[Document]
) -> None:
    assert pairs == planted_pairs(en_docs + zh_docs, rng_seed=11, per_kind=2)
    assert pairs != planted_pairs(en_docs + zh_docs, rng_seed=12, per_kind=2)


def test_planted_pairs_cover_every_kind_and_rate(pairs: list[Pair]) -> None:
    positives = [p for p in pairs if p.is_duplicate]
    kinds = Counter((p.kind, p.rate) for p in positives)
    assert len(kinds) == 4 * len(RATES) + 2 and set(kinds.values()) == {2}
    for p in positives:
        assert p.a != p.b and p.a_id == p.b_id
        assert (p.rate is None) == (p.kind in ("reorder", "boilerplate"))
        assert p.lang == ("zh" if p.a_id.startswith("zh/") else "en")
    negatives = [p for p in pairs if not p.is_duplicate]
    assert len(negatives) == len(positives)  # balanced by default


def test_negatives_are_different_documents(pairs: list[Pair]) -> None:
    negatives = [p for p in pairs if not p.is_duplicate]
    assert {p.kind for p in negatives} == {"unrelated", "hard_negative"}
    for p in negatives:
        assert p.a_id != p.b_id and p.a != p.b
        assert p.a_id.split("/")[0] == p.b_id.split("/")[0] == p.lang
        ja, jb = neardup.shingles(p.a), neardup.shingles(p.b)
        assert neardup.jaccard(ja, jb) < 0.5
        if p.kind == "hard_negative":
            assert family(p.a_id) == family(p.b_id)
    keys = [tuple(sorted((p.a_id, p.b_id))) for p in negatives]
    assert len(set(keys)) == len(keys)


def test_a_rendered_prefix_is_kept_on_disk_for_the_next_process(
    en_docs: list[Document], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The smoke runs are separate processes reading the same quick prefix: the first renders it
    with groff and stores it, the next read it back (equal), a longer limit renders again and
    keeps the longer prefix, and other sources never get a stored prefix of these."""
    sources = manpages.sources("en")[:24]
    monkeypatch.setattr(corpus, "sources", lambda lang: sources)
    monkeypatch.setattr(corpus, "_PREFIXES", {})
    first = english_documents(limit=6, cache_dir=tmp_path)
    assert first == en_docs[:6]

    def no_render(*args: object, **kwargs: object) -> None:
        raise AssertionError("rendered again")

    monkeypatch.setattr(corpus, "_PREFIXES", {})  # a new process
    with monkeypatch.context() as patched:
        patched.setattr(corpus, "render_stream", no_render)
        assert english_documents(limit=4, cache_dir=tmp_path) == first[:4]
        assert english_documents(limit=6, cache_dir=tmp_path) == first
    longer = english_documents(limit=9, cache_dir=tmp_path)
    assert longer[:6] == first and len(longer) == 9
    monkeypatch.setattr(corpus, "_PREFIXES", {})
    monkeypatch.setattr(corpus, "sources", lambda lang: sources[1:])
    renders: list[object] = []
    real_render = corpus.render_stream
    monkeypatch.setattr(corpus, "render_stream", lambda *a, **k: renders.append(a) or real_render(*a, **k))
    english_documents(limit=6, cache_dir=tmp_path)
    assert len(renders) == 1  # other sources: rendered, not served from the stored prefix


def _manual(path: Path, sections: int, rng: random.Random) -> None:
    """An HTML manual of ``sections`` h2 sections, each four paragraphs of 60 random words."""
    body = "".join(
        f"<h2>Section {n}</h2>" + "".join(f"<p>{' '.join(f'w{rng.randrange(10**6)}' for _ in range(60))}</p>" for _ in range(4))
        for n in range(sections)
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<html><body>{body}</body></html>")


def test_a_partial_heldout_corpus_is_refused_naming_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only some of Debian's manuals installed (issue 33, part 5: CI's ``ValueError: Sample
    larger than population``): the originality benchmark samples its originals from what there
    is when it is enough, and otherwise says what is missing and how to install it."""
    from benchmarks import heldout, originality

    rng = random.Random(1)
    for name in ("one", "two"):
        _manual(tmp_path / "reference" / f"{name}.en.html", 3, rng)
    installed, absent = str(tmp_path / "reference" / "*.en.html"), str(tmp_path / "faq" / "*.en.html")
    monkeypatch.setitem(heldout.SOURCES, "en", (installed, absent))
    assert heldout.missing("en") == [absent]
    assert len(heldout.heldout_documents("en")) == 6
    with pytest.raises(CorpusUnavailable, match=r"6 documents .* 200 originals") as refused:
        originality.assemble(200, 2, 22, "en", "heldout")
    assert absent in str(refused.value) and heldout.APT_INSTALL in str(refused.value)
    assert len(originality.sample_originals(heldout.heldout_documents("en"), 4, random.Random(2), "heldout", "en")) == 4
    unreachable = "postgresql+psycopg://nobody@127.0.0.1:9/none"  # refused before any server is asked
    status = originality.main(["--source", "heldout", "--url", unreachable, "--rows", "300", "--results-dir", str(tmp_path)])
    assert status == originality.CORPUS_UNAVAILABLE
    assert "corpus unavailable: the heldout corpus (en) has 6 documents" in capsys.readouterr().err
