"""benchmarks/scale.py computes fingerprints from cached paragraph features; with a Background it
must give exactly what ``Fingerprinter(background=...).fingerprint`` gives for the article text,
English, Chinese and mixed (per-script sums, centred integer rule)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from benchmarks import scale  # noqa: E402

WORDS = "file option the a of to and is in manual page command user system value default set list".split()
HAN = "文件选项命令用户系统默认设置列表手册页面值这个是的了在和"


def _paragraph(rng: random.Random) -> str:
    kind = rng.random()
    english = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 25)))
    chinese = "".join(rng.choice(HAN) for _ in range(rng.randint(3, 30))) + "。"
    return english if kind < 0.45 else chinese if kind < 0.9 else f"{english} {chinese}"


def test_fingerprints_of_with_background_equal_simsql() -> None:
    from simsql import Fingerprinter
    from simsql.fingerprint import Background

    rng = random.Random(7)
    paragraphs = [_paragraph(rng) for _ in range(300)]
    background = Background.fit(("\n\n".join(rng.sample(paragraphs, 4)) for _ in range(200)), Fingerprinter())
    assert any(background.latin) and any(background.han)
    fingerprinter = Fingerprinter(background=background)
    features = scale.paragraph_features(paragraphs, fingerprinter)
    members = scale.random_articles(np.random.default_rng(3), 400, len(paragraphs))
    fingerprints = scale.fingerprints_of(members, features, fingerprinter)
    for row, fp in zip(members, fingerprints):
        assert fingerprinter.fingerprint(scale.article_text(paragraphs, row)) == int(fp)
    # The centring changes fingerprints: the check above is not the uncentred rule by accident.
    plain = scale.fingerprints_of(members, features, Fingerprinter())
    assert np.count_nonzero(plain != fingerprints) > 100
