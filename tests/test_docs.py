"""docs/ is the reference, and it cannot drift from the code: every public name has an entry in
docs/api.md (signature generated from the code, what it returns, what it raises, an example),
docs/cli.md is what the parser says, every Python block of docs/*.md runs (on PostgreSQL twice in
a row, and on MySQL/MariaDB), every ``# prints X`` holds, and no link of the README or of docs/
leads nowhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import Engine

import simsql
from tests.readme import DOCS, README, ROOT, check_print_claims, documents, fenced, fenced_text, python_blocks, run_blocks
from tools import docs_reference

API = DOCS / "api.md"

PENDING_PAGES: set[str] = set()
"""Pages linked before they exist: none now (every branch of issue 23 has landed)."""


_entries = docs_reference.api_entries


def test_every_public_name_has_a_reference_entry() -> None:
    entries = {name for name in _entries(API.read_text(encoding="utf-8")) if "." not in name}
    assert sorted(set(simsql.__all__) - entries) == [], "public names without an entry in docs/api.md"
    assert sorted(entries - set(simsql.__all__)) == [], "entries in docs/api.md for names simsql does not export"


def test_module_entries_name_what_their_module_holds() -> None:
    """An entry ``simsql.<module>.<name>`` documents a name importable from there, not one of the
    top level's (which has its own entry)."""
    for name in (name for name in _entries(API.read_text(encoding="utf-8")) if "." in name):
        module, _, attribute = name.rpartition(".")
        assert module.startswith("simsql.") and attribute not in simsql.__all__, name
        assert docs_reference.resolve(name) is not None, name


def test_every_entry_has_a_signature_and_an_example() -> None:
    for name, body in _entries(API.read_text(encoding="utf-8")).items():
        infos = [block.info for block in fenced_text(body, name)]
        assert infos[:1] == ["text"], f"{name}: no signature block first"
        assert "python" in infos, f"{name}: no example"
        prose = re.sub(r"```.*?```", "", body, flags=re.DOTALL)
        assert len(prose.split()) >= 8, f"{name}: no description"


def test_signatures_in_api_md_are_the_codes() -> None:
    """Regenerate with ``python tools/docs_reference.py``."""
    text = API.read_text(encoding="utf-8")
    assert docs_reference.api_markdown(text) == text


def test_cli_reference_is_what_the_parser_says() -> None:
    """docs/cli.md is generated from ``simsql.cli.build_parser()``; regenerate it with
    ``python tools/docs_reference.py`` after changing a command."""
    assert (DOCS / "cli.md").read_text(encoding="utf-8") == docs_reference.cli_markdown()


def test_cli_reference_names_every_command() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    for command in ("db upgrade", "attach", "detach", "status", "backfill", "refingerprint", "similar", "dupes", "fingerprint", "demo"):
        assert f"## `simsql {command}`" in text


def test_deprecated_names_are_documented_at_their_new_home() -> None:
    text = API.read_text(encoding="utf-8")
    moved = text.split("## Moved in 0.4", 1)[1].split("\n## ", 1)[0]
    entries = _entries(text)
    for old, new in simsql.DEPRECATED_NAMES.items():
        assert f"`simsql.{old}`" in moved, old
        assert f"`{new}`" in moved, new
        assert new in entries, f"no entry ### `{new}` in docs/api.md"


# Links ---------------------------------------------------------------------------------------

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _prose(markdown: str) -> str:
    """``markdown`` without its fenced blocks and inline code."""
    return re.sub(r"`[^`\n]*`", "", re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL))


def anchors(markdown: str) -> set[str]:
    """GitHub's anchors for the headings of ``markdown`` (outside code blocks)."""
    found = set()
    for heading in re.findall(r"^#{1,6} (.*)$", re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL), re.MULTILINE):
        found.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return found


def _dead_links(document: Path) -> list[str]:
    dead = []
    for target in _LINK.findall(_prose(document.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path_part, _, anchor = target.partition("#")
        path = (document.parent / path_part).resolve() if path_part else document
        if not path.exists():
            if path.parent == DOCS and path.name in PENDING_PAGES:
                continue
            dead.append(target)
        elif anchor and path.suffix == ".md" and anchor not in anchors(path.read_text(encoding="utf-8")):
            dead.append(target)
    return dead


@pytest.mark.parametrize("document", documents(), ids=lambda path: str(path.relative_to(ROOT)))
def test_no_dead_links(document: Path) -> None:
    assert _dead_links(document) == []


def test_the_docs_index_lists_every_page() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w-]+\.md)\)", index))
    pages = {path.name for path in DOCS.glob("*.md")} - {"README.md"}
    assert sorted(pages - linked) == []
    assert sorted(linked - pages - PENDING_PAGES) == []


def test_performance_figures_are_benchmarks_figures() -> None:
    """The README's performance table copies its figures from BENCHMARKS.md: each one must be in
    the section its row links to (a figure typed by hand, or left behind by a rerun, fails)."""
    readme = README.read_text(encoding="utf-8")
    section = readme.split("## Performance", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|") and "BENCHMARKS.md#" in line]
    assert len(rows) >= 5
    benchmarks = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        (anchor,) = re.findall(r"BENCHMARKS\.md#([^)]+)", cells[-1])
        text = _section(benchmarks, anchor)
        for figure in re.findall(r"\d[\d,]*(?:\.\d+)?", " ".join(cells[1:-1])):
            assert re.search(rf"(?<![\d.]){re.escape(figure)}(?![\d])", text), f"{figure} (row {cells[0]!r}) is not in {anchor}"


def _section(markdown: str, anchor: str) -> str:
    lines = markdown.splitlines()
    for number, line in enumerate(lines):
        heading = re.match(r"(#{1,6}) (.*)", line)
        if heading and re.sub(r"[^\w\- ]", "", heading.group(2).strip().lower()).replace(" ", "-") == anchor:
            level = len(heading.group(1))
            end = next(
                (n for n in range(number + 1, len(lines)) if (h := re.match(r"(#{1,6}) ", lines[n])) and len(h.group(1)) <= level),
                len(lines),
            )
            return "\n".join(lines[number:end])
    raise AssertionError(f"no section #{anchor} in BENCHMARKS.md")


# Python blocks -------------------------------------------------------------------------------

PAGES = [path for path in sorted(DOCS.glob("*.md")) if python_blocks(path, "postgresql")]


def _requirements(page: Path) -> None:
    """Skip, with the reason, a page whose ``<!-- requires: module, ... -->`` is not installed
    (the test extra installs them all, so CI runs every page)."""
    for needed in re.findall(r"<!--\s*requires:\s*(.*?)\s*-->", page.read_text(encoding="utf-8")):
        for module in needed.split(","):
            pytest.importorskip(module.strip())


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.name)
def test_docs_python_blocks_run_twice_on_postgresql(page: Path, url: str) -> None:
    """A page's Python blocks, in order, as one script in a fresh interpreter given only
    ``DATABASE_URL``; then again on the same database (a reader's second try must work too)."""
    _requirements(page)
    code = python_blocks(page, "postgresql")
    for _ in range(2):
        check_print_claims(code, run_blocks(code, f"docs/{page.name}", url), f"docs/{page.name}")


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.name)
def test_docs_python_blocks_run_on_mysql(page: Path, mysql_engine: Engine) -> None:
    """The same on MySQL/MariaDB, but for blocks marked ``<!-- postgresql only: why -->``."""
    _requirements(page)
    code = python_blocks(page, "mysql")
    mysql_url = mysql_engine.url.set(drivername="mysql").render_as_string(hide_password=False)
    check_print_claims(code, run_blocks(code, f"docs/{page.name}", mysql_url), f"docs/{page.name}")


def test_marks_are_few() -> None:
    """Fragments that do not run are the exception: say why, and keep them rare."""
    marked = [(path.name, block.mark) for path in documents() for block in fenced(path) if block.info == "python" and block.mark]
    assert len(marked) <= 6, marked


_SERVER_URL = re.compile(r"\b(?:postgresql|postgres|mysql|mariadb)(?:\+\w+)?://")


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.name)
def test_docs_python_blocks_take_their_server_from_database_url(page: Path) -> None:
    """A block that names a server URL also reads ``DATABASE_URL``: the tests hand each run its
    own database (PostgreSQL, then MySQL/MariaDB), and a block that connects to a URL of its own
    tests nothing on the server it claims to and collides with other runs on the one it names."""
    hard_coded = [
        number
        for number, code in enumerate(python_blocks(page, "postgresql"), 1)
        if _SERVER_URL.search(code) and "DATABASE_URL" not in code
    ]
    assert not hard_coded, f"docs/{page.name}: python blocks {hard_coded} connect to a URL of their own"
