"""What a newcomer reads in help texts and error messages says exactly what happens."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

import simsql
import simsql.errors
import simsql.text.fingerprint
from tests.models import Article
from tests.test_cli import cli, failed


def test_demo_help_does_not_offer_the_environment_it_ignores() -> None:
    result = cli("demo", "--help", env={"SIMSQL_DATABASE_URL": "postgresql://app:secret@db/app"})
    assert result.returncode == 0, result.stderr
    assert "$SIMSQL_DATABASE_URL" not in result.stdout
    assert "$DATABASE_URL" not in result.stdout
    assert "secret" not in result.stdout
    assert "embedded PostgreSQL" in result.stdout


@pytest.mark.parametrize("command", [("fingerprint",), ("db", "history")])
def test_commands_that_need_no_database_offer_no_url(command: tuple[str, ...]) -> None:
    result = cli(*command, "--help")
    assert result.returncode == 0, result.stderr
    assert "--url" not in result.stdout
    assert cli(*command, "--url", "postgresql://x/y", *(["text"] if command == ("fingerprint",) else [])).returncode == 2


@pytest.mark.parametrize(
    ("text", "described"),
    [("👍", "1 code point"), ("👍🏽!", "3 code points"), ("   ", "whitespace only"), ("", "empty string")],
)
def test_text_without_words_is_described_precisely(text: str, described: str) -> None:
    with pytest.raises(simsql.EmptyDocument) as raised:
        simsql.text.fingerprint.simhash(text)
    message = str(raised.value)
    assert described in message
    assert not re.search(r"\b1 \w+s\b", message)  # "1 characters"


def test_fingerprint_command_reports_an_emoji_only_text_cleanly() -> None:
    failed(cli("fingerprint", "👍"), 1, "1 code point")


def test_messages_use_an_before_a_vowel() -> None:
    with pytest.raises(TypeError) as raised:
        simsql.most_similar(select(Article), ["not", "a", "target"])  # type: ignore[arg-type]
    assert "Article" in str(raised.value)
    assert not re.search(r"\ba [AEIOUaeiou]", str(raised.value))


def test_not_attached_advice_names_what_works_after_a_migration() -> None:
    # After op.add_simhash, a plain model of the table raises NotAttached; simsql.attach_model (a side
    # table) is the wrong advice there: the columns are on the table already.
    class Base(DeclarativeBase):
        pass

    class Migrated(Base):
        __tablename__ = "migrated_articles"
        id: Mapped[int] = mapped_column(primary_key=True)
        body: Mapped[str]

    with pytest.raises(simsql.text.errors.NotAttached) as raised:
        simsql.most_similar(select(Migrated), "some text")
    message = str(raised.value)
    assert "simsql.SimHashMixin" in message
    assert "simsql.reflect(connection, 'migrated_articles')" in message
