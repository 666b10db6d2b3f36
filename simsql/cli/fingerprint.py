"""``simsql fingerprint``: the fingerprint of one text, with any settings, and no database."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import simsql
import simsql.text.bits

from .common import EXIT_OK, UsageError, load_background, with_background
from .options import format_option, non_negative_int, positive_int
from .output import read_text, write_json


def cmd_fingerprint(args: argparse.Namespace) -> int:
    if (args.text is None) == (args.file is None):
        raise UsageError("give the text as an argument or with --file (one of them)")
    text = args.text if args.text is not None else read_text(args.file)
    try:
        fingerprinter = simsql.Fingerprinter(
            tokenizer=args.tokenizer,
            shingle_size=args.shingle_size,
            char_ngram_size=args.char_ngram_size,
            chinese=args.chinese,
            weighting=args.weighting,
            seed=args.seed,
            version=args.algorithm_version,
        )
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None
    if args.background is not None:
        fingerprinter = with_background(fingerprinter, load_background(args.background))
    fingerprint = fingerprinter.fingerprint(text)
    blocks = simsql.text.bits.blocks(fingerprint)
    if args.format == "json":
        write_json(
            {
                "hex": f"0x{fingerprint:016x}",
                "unsigned": fingerprint,
                "signed": simsql.text.bits.to_signed(fingerprint),
                "blocks": list(blocks),
                "config_id": fingerprinter.config_id,
                "settings": fingerprinter.settings,
            },
            sys.stdout,
        )
        return EXIT_OK
    print(f"hex       0x{fingerprint:016x}")
    print(f"unsigned  {fingerprint}")
    print(f"signed    {simsql.text.bits.to_signed(fingerprint)}  (as stored in a bigint)")
    print(f"blocks    {' '.join(str(b) for b in blocks)}  (simhash_b0..simhash_b3)")
    print(f"config    {fingerprinter.config_id}")
    return EXIT_OK


def add_fingerprint(commands: Any, common: argparse.ArgumentParser, local: argparse.ArgumentParser) -> None:
    fingerprint = commands.add_parser(
        "fingerprint", parents=[local], help="print the fingerprint of a text (no database)"
    )
    fingerprint.add_argument("text", nargs="?", help="the text")
    fingerprint.add_argument("--file", help="read the text from a file ('-' for stdin)")
    fingerprint.add_argument("--tokenizer", choices=("words", "chars"), default="words")
    fingerprint.add_argument("--shingle-size", type=positive_int, default=1, help="words per shingle (default: 1)")
    fingerprint.add_argument("--char-ngram-size", type=positive_int, default=4, help="characters per n-gram (default: 4)")
    fingerprint.add_argument(
        "--chinese", choices=("jieba", "bigrams"), default=None,
        help="default: the version's default (version 2: bigrams; version 1: jieba)",
    )  # fmt: skip
    fingerprint.add_argument(
        "--weighting", choices=("prior", "log", "count", "jieba_idf"), default=None,
        help="default: the version's default (version 2: prior; version 1: log)",
    )  # fmt: skip
    fingerprint.add_argument("--seed", type=non_negative_int, default=0)
    fingerprint.add_argument(
        "--algorithm-version", type=int, choices=(1, 2), default=2, dest="algorithm_version",
        help="fingerprint algorithm version (1: simsql 0.1's defaults; default: 2)",
    )  # fmt: skip
    fingerprint.add_argument("--background", metavar="FILE", help="centre bits on this background (see refingerprint)")
    format_option(fingerprint, ("text", "json"))
    fingerprint.set_defaults(handler=cmd_fingerprint, parser=fingerprint)
