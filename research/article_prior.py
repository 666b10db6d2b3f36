"""An article-scale word prior from general-purpose frequency lists (issue 8 experiments).

The built-in prior (``prior-1``) puts English on jieba's IDF scale with documents of ``L = 10``
tokens, so a word counts as common only if it is among the ~100 commonest ("used", "file",
"which" weigh the maximum), and Chinese character bigrams that cross a word boundary ("中的",
"的一") are not in it at all. Both push the same bits in most articles. This prior instead
gives every feature the IDF it would have among articles of ``L`` tokens,
``-ln(1 - exp(-L p))``, with ``p`` its share of tokens in general text:

* English (and every non-Han word): wordfreq 3.1.1, ``iter_wordlist("en", "best")``, each
  entry split into simsql tokens (a token's share is the sum over the entries containing it);
* Chinese character bigrams: jieba 0.42.1's ``dict.txt`` word frequencies read as a unigram
  language model: a word of ``n`` characters contributes its ``n - 1`` inner bigrams, and the
  boundary between two words the bigram (last character of one, first of the next) at the
  product of their probabilities (the commonest 3,000 first and last characters); shares are
  per bigram token (divided by the mean word length).

Nothing here is fitted on the texts the benchmarks evaluate on.
"""

from __future__ import annotations

import math
import os
from functools import lru_cache

import numpy as np

from benchmarks.internals import HAN_RUN
from simsql.fingerprint import IdfTable
from simsql.text import tokenize

BOUNDARY_CHARS = 3000
MIN_SHARE = 1e-9


@lru_cache(maxsize=1)
def english_shares() -> dict[bytes, float]:
    import wordfreq

    shares: dict[bytes, float] = {}
    for entry in wordfreq.iter_wordlist("en", "best"):
        p = wordfreq.word_frequency(entry, "en")
        for chunk in tokenize.word_tokens(tokenize.normalize(entry), "bigrams"):
            for token in chunk:
                key = token if isinstance(token, bytes) else token.encode("utf-8")
                shares[key] = shares.get(key, 0.0) + p
    return shares


@lru_cache(maxsize=2)
def chinese_bigram_shares(characters: bool = True) -> dict[bytes, float]:
    """Shares of Chinese character bigrams per bigram token, and (``characters``) of single
    characters, for the one-character Han runs that are features of their own. A background of
    bigram streams (:func:`research.centring.background`) leaves the characters out."""
    import jieba

    words: dict[str, int] = {}
    with open(os.path.join(os.path.dirname(jieba.__file__), "dict.txt"), encoding="utf-8") as handle:
        for line in handle:
            parts = line.split()
            if len(parts) >= 2:
                word = tokenize.normalize(parts[0])
                if HAN_RUN.fullmatch(word):
                    words[word] = words.get(word, 0) + int(parts[1])
    total = sum(words.values())
    shares: dict[str, float] = {}
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for word, count in words.items():
        p = count / total
        for i in range(len(word) - 1):
            shares[word[i : i + 2]] = shares.get(word[i : i + 2], 0.0) + p
        first[word[0]] = first.get(word[0], 0.0) + p
        last[word[-1]] = last.get(word[-1], 0.0) + p
    heads = sorted(first.items(), key=lambda kv: (-kv[1], kv[0]))[:BOUNDARY_CHARS]
    tails = sorted(last.items(), key=lambda kv: (-kv[1], kv[0]))[:BOUNDARY_CHARS]
    outer = np.array([v for _, v in tails])[:, None] * np.array([v for _, v in heads])[None, :]
    for i, j in zip(*np.nonzero(outer > MIN_SHARE)):
        bigram = tails[i][0] + heads[j][0]
        shares[bigram] = shares.get(bigram, 0.0) + float(outer[i, j])
    mean_length = sum(count / total * len(word) for word, count in words.items())
    out = {k.encode("utf-8"): v / mean_length for k, v in shares.items()}
    if not characters:
        return out
    # A Han run of one character (between Latin words or punctuation) is a feature of its own;
    # it gets the character's share, so "的" and "在" alone weigh as little as common bigrams.
    single: dict[str, float] = {}
    for word, count in words.items():
        for char in word:
            single[char] = single.get(char, 0.0) + count / total
    out.update({k.encode("utf-8"): v / mean_length for k, v in single.items()})
    return out


def article_idf(share: float, tokens: float) -> float:
    """IDF of a feature of token share ``share`` among articles of ``tokens`` tokens."""
    return -math.log(-math.expm1(-tokens * share))


def article_prior(tokens: float = 300.0, low: float = 1.0, high: float = 8.0, floor: float = 0.05) -> IdfTable:
    """Weights ``clip(article IDF - low, floor, high - low)`` as an :class:`IdfTable`.

    Features missing from both lists weigh ``high - low`` (rarer than anything listed); entries
    already at that weight are left out to keep the table small.
    """
    ceiling = high - low
    weights: dict[str, float] = {}
    for shares in (english_shares(), chinese_bigram_shares()):
        for feature, share in shares.items():
            if share <= 0:
                continue
            w = min(max(article_idf(share, tokens) - low, floor), ceiling)
            if w < ceiling:
                weights[feature.decode("utf-8", "surrogatepass")] = round(w, 3)
    return IdfTable(weights, default=ceiling)
