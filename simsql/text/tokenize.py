"""Text to features: normalisation, word shingles, character n-grams, Chinese segmentation.

Word features come out as UTF-8 ``bytes`` (text without Han characters is cut by
``bytes.translate`` and ``split``, the fastest path, and the hash consumes bytes); character
n-grams come out as ``str``, and :func:`encode_features` encodes only the *distinct* ones to
UTF-8 afterwards. Lone surrogates are encoded with ``surrogatepass`` so
that no ``str`` can make fingerprinting fail.

Long documents are processed in chunks cut at non-word characters, so memory stays bounded by
the chunk size plus the number of distinct features, whatever the document size. Shingles and
n-grams that straddle a cut are carried over, so chunking never changes the output.
"""

from __future__ import annotations

import importlib
import logging
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterator
from typing import Any, Literal

from .errors import MissingDependency

TokenizerName = Literal["words", "chars"]
ChineseMode = Literal["jieba", "bigrams"]

CHUNK_CHARS = 1 << 20
"""Documents longer than this are tokenized piecewise (bounded memory)."""

# CJK Unified Ideographs, Extension A, compatibility ideographs and the supplementary planes.
# Han text has no spaces between words, so it goes to a segmenter instead of the word regex.
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_HAN_RUN = re.compile(f"[{_HAN}]+")
_WORD_OR_HAN = re.compile(f"([{_HAN}]+)|([^\\W{_HAN}]+)")
_NON_WORD = re.compile(r"\W")
_NON_ASCII_NON_WORD = re.compile(r"[^\x00-\x7f\w]")
_WORD_BYTE = frozenset(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")
_SEPARATE = bytes(b if b in _WORD_BYTE or b >= 0x80 else 0x20 for b in range(256))
"""``bytes.translate`` table: every ASCII byte that is not a word character (what ``\\w`` matches in
ASCII) becomes a space; word bytes and every byte of a multi-byte UTF-8 sequence stay."""
_SPACES = re.compile(r"\s+")

_JIEBA_LOCK = threading.Lock()
_jieba_tokenizer = None


def describe_wordless(text: str) -> str:
    """How an error message names a text without features. Counted in code points, what ``len``
    counts: one emoji the eye sees may be several."""
    if not text:
        return "empty string"
    if text.isspace():
        return "whitespace only"
    count = len(text)
    preview = text if count <= 20 else text[:20] + "..."
    return f"{preview!r}: {count} code point{'' if count == 1 else 's'}, no letters or digits forming a word"


def require_text(text: object) -> str:
    """``text`` itself when it is a ``str``; otherwise a ``TypeError`` that says what was given
    and what to do (``None``: store NULL yourself; bytes: decode first). Every entry point that
    takes text checks it here, so the messages are the same everywhere."""
    if isinstance(text, str):
        return text
    if text is None:
        raise TypeError("text must be a str, got None; store NULL yourself or skip the row")
    if isinstance(text, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"text must be a str, got {type(text).__name__}; decode it first, "
            "for example data.decode('utf-8', errors='replace')"
        )
    raise TypeError(f"text must be a str, got {type(text).__name__}")


def normalize(text: str) -> str:
    """NFKC then case folding, so full-width, ligature and case variants give one feature.

    ASCII text is already NFKC, and ``lower`` equals ``casefold`` on ASCII, so the common case
    skips the expensive Unicode passes.
    """
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", text).casefold()


def import_jieba(module: str = "jieba") -> Any:
    """``jieba`` (or ``module``, one of its submodules), which only ``chinese="jieba"`` (version
    1's default) and ``weighting="jieba_idf"`` use. It is an extra (42 MB of dictionaries): not
    installed, :class:`~simsql.text.errors.MissingDependency` says so and how to add it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name not in ("jieba", module):
            raise
        raise MissingDependency(
            'Chinese segmentation by jieba (chinese="jieba", the default of Fingerprinter(version=1), '
            'and weighting="jieba_idf") needs the jieba package: pip install "simsql[jieba]". '
            "The default configuration segments Chinese into character bigrams and needs nothing more.",
            name="jieba",
        ) from error


def jieba_version() -> str:
    """Version of the jieba distribution, recorded in ``Fingerprinter.config_id``."""
    return str(import_jieba().__version__)


def _jieba():
    """A private jieba tokenizer, built once.

    Private so that a user's ``jieba.load_userdict`` or ``add_word`` on the global tokenizer
    cannot silently change simsql's fingerprints. jieba logs its dictionary loading at DEBUG
    through a handler it installs itself; the level is raised only while loading and restored.
    """
    global _jieba_tokenizer
    if _jieba_tokenizer is None:
        with _JIEBA_LOCK:
            if _jieba_tokenizer is None:
                jieba = import_jieba()
                jieba_logger = logging.getLogger("jieba")
                previous = jieba_logger.level
                jieba_logger.setLevel(logging.WARNING)
                try:
                    tokenizer = jieba.Tokenizer()
                    tokenizer.initialize()
                finally:
                    jieba_logger.setLevel(previous)
                _jieba_tokenizer = tokenizer
    return _jieba_tokenizer


Token = bytes | str


def encode_features(counts: dict[Token, int], kinds: set[type] | None = None) -> dict[bytes, int]:
    """Counts keyed by UTF-8 bytes, merging a feature seen both as bytes and as str.

    ``kinds``: the types of the keys when the caller knows them (each chunk's tokens are of one
    type). Keys all ``str`` are encoded in one pass: two distinct strings never encode alike
    (UTF-8 with ``surrogatepass`` is one-to-one), so nothing merges and the order is kept.
    """
    if kinds is None:
        kinds = {type(key) for key in counts}
    if not kinds - {bytes}:
        return counts  # type: ignore[return-value]
    if kinds == {str}:
        try:
            return dict(zip(map(str.encode, counts), counts.values()))  # type: ignore[arg-type]
        except UnicodeEncodeError:  # a lone surrogate
            return {key.encode("utf-8", "surrogatepass"): count for key, count in counts.items()}  # type: ignore[union-attr]
    encoded: dict[bytes, int] = {}
    for key, count in counts.items():
        raw = key if type(key) is bytes else key.encode("utf-8", "surrogatepass")  # type: ignore[union-attr]
        encoded[raw] = encoded.get(raw, 0) + count
    return encoded


def _chunks(text: str) -> Iterator[str]:
    """Cut ``text`` into pieces of about ``size`` chars at non-word characters.

    A word or Han run is never split, so tokens are the same as for the whole text.
    """
    size = CHUNK_CHARS
    start = 0
    length = len(text)
    while length - start > size:
        match = _NON_WORD.search(text, start + size)
        if match is None:
            break
        cut = match.end()
        yield text[start:cut]
        start = cut
    yield text[start:]


def _ascii_words(data: bytes) -> list[bytes]:
    """The runs of word bytes of ``data`` (what ``rb"\\w+"`` finds, bytes of 0x80 and above
    counted as word bytes): ASCII separators become spaces, then ``split``."""
    return data.translate(_SEPARATE).split()


def _han_bigrams(run: str) -> list[bytes]:
    """The character bigrams of a Han run of two or more characters, as UTF-8: sliced from the
    encoded run when every character takes three bytes (the Basic Multilingual Plane's Han
    characters), so no bigram needs a ``str`` of its own."""
    encoded = run.encode("utf-8")
    if len(encoded) == 3 * len(run):
        return [encoded[i : i + 6] for i in range(0, len(encoded) - 3, 3)]
    return [bigram.encode("utf-8") for bigram in _han_tokens(run, "bigrams")]


def _han_tokens(run: str, chinese: ChineseMode) -> list[str]:
    if chinese == "bigrams":
        if len(run) < 2:
            return [run]
        return [run[i : i + 2] for i in range(len(run) - 1)]
    return [word for word in _jieba().cut(run, HMM=True) if word.strip()]


def word_tokens(text: str, chinese: ChineseMode = "jieba") -> Iterator[list[bytes] | list[str]]:
    """Yield lists of word tokens, one list per chunk, of already normalised text.

    Han runs are segmented (jieba, or character bigrams); every other run of letters and
    digits is one word. Punctuation, symbols and emoji are separators. Tokens are UTF-8
    ``bytes``: a chunk without Han text is cut by ``bytes.translate`` and ``split`` (several
    times faster than the regex), Han bigrams are sliced from the encoded run.
    """
    for chunk in _chunks(text):
        if chunk.isascii():
            yield _ascii_words(chunk.encode("ascii"))
        elif _HAN_RUN.search(chunk) is None:
            # Non-word characters beyond ASCII become spaces; what remains beyond ASCII is word
            # characters, whose UTF-8 bytes stay inside their words: the words \w+ finds, encoded.
            yield _ascii_words(_NON_ASCII_NON_WORD.sub(" ", chunk).encode("utf-8"))
        else:
            tokens: list[bytes] = []
            append, extend = tokens.append, tokens.extend
            for han, word in _WORD_OR_HAN.findall(chunk):
                if not han:
                    append(word.encode("utf-8", "surrogatepass"))
                elif chinese == "bigrams" and len(han) > 1:
                    extend(_han_bigrams(han))
                else:
                    extend(token.encode("utf-8") for token in _han_tokens(han, chinese))
            yield tokens


def _same_type(tokens: list[Any], like: Token) -> list[Any]:
    """Carried-over tokens in the type of the next chunk's tokens.

    A carried token may be a non-ASCII word that crossed an ASCII chunk as UTF-8 bytes, so bytes
    are decoded as UTF-8 (never as ASCII), with ``surrogatepass`` to round-trip lone surrogates.
    """
    if type(like) is bytes:
        return [t if type(t) is bytes else t.encode("utf-8", "surrogatepass") for t in tokens]
    return [t.decode("utf-8", "surrogatepass") if type(t) is bytes else t for t in tokens]


def shingles(token_chunks: Iterator[list[Any]], k: int) -> Iterator[list[Any]]:
    """Word k-shingles over a chunked token stream, joining across chunk boundaries.

    A document with fewer than ``k`` tokens yields one shingle of all its tokens, so that short
    texts still have a fingerprint.
    """
    if k == 1:
        yield from token_chunks
        return
    carry: list[Any] = []
    emitted = False
    for chunk in token_chunks:
        if not chunk:
            continue
        tokens = _same_type(carry, chunk[0]) + chunk
        join = (b" " if type(chunk[0]) is bytes else " ").join
        if len(tokens) >= k:
            emitted = True
            yield [join(gram) for gram in zip(*(tokens[i:] for i in range(k)))]
        carry = tokens[-(k - 1) :] if len(tokens) >= k - 1 else tokens
    if not emitted and carry:
        yield [(b" " if type(carry[0]) is bytes else " ").join(carry)]


def char_ngrams(text: str, n: int) -> Iterator[list[str]]:
    """Character n-grams over normalised text with whitespace runs collapsed to one space."""
    carry = ""
    emitted = False
    for chunk in _chunks(_SPACES.sub(" ", text).strip()):
        piece = carry + chunk
        if len(piece) >= n:
            emitted = True
            yield [piece[i : i + n] for i in range(len(piece) - n + 1)]
        carry = piece[-(n - 1) :] if n > 1 else ""
    if not emitted:
        rest = carry.strip()
        if rest:
            yield [rest]


def feature_counts(
    text: str,
    tokenizer: TokenizerName = "words",
    shingle_size: int = 1,
    char_ngram_size: int = 4,
    chinese: ChineseMode = "bigrams",
) -> dict[bytes, int]:
    """Distinct features of raw ``text`` (UTF-8 bytes) with their counts.

    The defaults are the default :class:`~simsql.Fingerprinter`'s tokenizer settings, so that
    :meth:`~simsql.IdfTable.fit` can count features without importing the fingerprinter.
    """
    counts: Counter[Token] = Counter()
    kinds: set[type] = set()
    for chunk in features(text, tokenizer, shingle_size, char_ngram_size, chinese):
        if chunk:
            kinds.add(type(chunk[0]))  # a chunk's tokens are all bytes or all str
            counts.update(chunk)
    return encode_features(counts, kinds)


def features(
    text: str,
    tokenizer: TokenizerName,
    shingle_size: int,
    char_ngram_size: int,
    chinese: ChineseMode,
) -> Iterator[list[Any]]:
    """Features of raw ``text`` in chunks; the single entry point used by the fingerprinter."""
    normalized = normalize(text)
    if tokenizer == "chars":
        return char_ngrams(normalized, char_ngram_size)
    return shingles(word_tokens(normalized, chinese), shingle_size)


HAN_LEAD = b"\xe3"
"""No UTF-8 sequence below this lead byte encodes a Han character (U+3400 is E3 90 80)."""


def is_han_feature(feature: bytes) -> bool:
    """Whether a UTF-8 feature is Han text: its first character is a Han character.

    Word features are all-Han or Han-free (Han runs are segmented apart from other words), so
    the first character decides; a character n-gram or shingle mixing scripts counts by its first.
    Used by :class:`~simsql.text.background.Background` to centre each script on its own lean.
    """
    return feature[:1] >= HAN_LEAD and _HAN_RUN.match(feature[:4].decode("utf-8", "ignore")) is not None
