"""A benchmark's cache is read back only for the corpus it was computed from: ``text_set`` kept
its queries and their true neighbours under a name of rows and queries alone, so after the man
pages were rendered again (58,003 paragraphs instead of 59,255) it paired the new corpus's rows
with the old rows' truth, and every recall measured against it was wrong."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks import corpus, lists_data, scale

pytestmark = pytest.mark.harness


def test_the_truth_of_a_text_set_is_never_another_corpus_s(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real_text = scale.real_text
    try:
        real_text("default", limit=4)
    except corpus.CorpusUnavailable as exc:
        pytest.skip(str(exc))
    monkeypatch.setattr(lists_data, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(corpus, "CACHE_DIR", tmp_path)  # the rows' cache (scale.build_cached reads it when called)
    first = lists_data.text_set(300, 4, documents=4)
    # the same call once the corpus under it changed (rendered again, fewer paragraphs)
    monkeypatch.setattr(scale, "real_text", lambda config="default", limit=None, source="manpages": real_text(config, 3, source))
    second = lists_data.text_set(300, 4, documents=4)
    assert len(second.paragraphs) < len(first.paragraphs)
    truth, tenth = lists_data.hamming_truth(second.fingerprints, second.queries)
    assert np.array_equal(second.truth, truth) and np.array_equal(second.tenth, tenth)
