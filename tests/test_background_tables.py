"""A table moved to a background fitted on its own text: API and CLI, on a real database.

Every stored fingerprint is checked against the one Python computes with the background, the
registry keeps refusing the uncentred configuration afterwards, and the commands that rebuild
the configuration from the registry (backfill, similar) work without being handed the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, select, text

import simsql
import simsql.alembic
import simsql.bits
from simsql import Fingerprinter
from simsql.errors import ConfigMismatch, NotAttached
from simsql.fingerprint import Background
from simsql.lifecycle.refingerprinting import refingerprint
from simsql.lifecycle.sampling import fit_background

from .command_line import cli, failed, ok
from .tables import build_docs, check_fingerprints, config_id, holder_sql

V2 = Fingerprinter()


def _attached(engine: Engine) -> None:
    build_docs(engine)
    simsql.alembic.upgrade(engine)
    simsql.attach_table(engine, "docs", ["title", "body"])
    simsql.backfill(engine, "docs", workers=0)


def _lean(engine: Engine) -> float:
    """Mean |P(bit set) - 1/2| over the stored fingerprints."""
    with engine.connect() as connection:
        stored = [simsql.bits.to_unsigned(v) for v in connection.execute(text("SELECT simhash FROM docs WHERE simhash IS NOT NULL")).scalars()]
    bits = np.array([[(fp >> i) & 1 for i in range(64)] for fp in stored])
    return float(np.abs(bits.mean(axis=0) - 0.5).mean())


def test_fit_on_the_table_then_move_it_online(engine: Engine) -> None:
    _attached(engine)
    before = _lean(engine)
    background = fit_background(engine, "docs", sample=1000)
    assert background.documents > 900 and background.fitted_for == V2.config_id
    centred = Fingerprinter(background=background)
    assert refingerprint(engine, "docs", to=centred, workers=0).switched
    with_text, fingerprinted = check_fingerprints(engine, holder_sql(False), centred)
    assert fingerprinted == with_text > 2000
    assert config_id(engine, "docs") == centred.config_id
    after = _lean(engine)
    assert before > 0.05, "the test table's common words should lean the bits (else this proves nothing)"
    assert after < before / 2
    # The recorded configuration carries the background: rebuilt from the registry alone.
    with engine.connect() as connection:
        settings = json.loads(json.dumps(simsql.store.registry.read(connection, "docs").settings))  # type: ignore[union-attr]
    assert Fingerprinter.from_settings(settings) == centred
    simsql.backfill(engine, "docs", workers=0)  # no fingerprinter given: the registry's own
    with pytest.raises(ConfigMismatch):
        simsql.backfill(engine, "docs", fingerprinter=V2, workers=0)
    with engine.connect() as connection:
        Docs: Any = simsql.reflect(connection, "docs")
        body = connection.execute(text("SELECT title || chr(10) || body FROM docs WHERE id = 11")).scalar_one()
        found = connection.execute(select(Docs.id).where(simsql.similar_to(Docs, body, max_distance=0))).scalars().all()
        assert 11 in found


def test_fit_background_refuses_unattached_and_textless_tables(engine: Engine) -> None:
    simsql.alembic.upgrade(engine)
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE few (id int PRIMARY KEY, body text)"))
        connection.execute(text("INSERT INTO few SELECT i, CASE WHEN i % 2 = 0 THEN 'some words ' || i END FROM generate_series(1, 150) i"))
    with pytest.raises(NotAttached):
        fit_background(engine, "few")
    simsql.attach_table(engine, "few", ["body"])
    with pytest.raises(ValueError, match="few holds 75 texts in a sample of 5000"):
        fit_background(engine, "few")
    with pytest.raises(ValueError, match="sample must be a positive int"):
        fit_background(engine, "few", sample=0)


def test_cli_fits_saves_and_moves_then_resumes_with_the_file(engine: Engine, url: str, tmp_path: Path) -> None:
    _attached(engine)
    saved = tmp_path / "docs.background.json"
    moved = ok(cli("refingerprint", "--table", "docs", "--fit-background", str(saved), "--sample", "800", "--workers", "0", "--no-progress", url=url))
    assert f"saved to {saved}" in moved.stdout and "Background.load(" in moved.stdout
    background = Background.load(saved)
    centred = Fingerprinter(version=3, background=background)  # refingerprint's default: version 3
    assert config_id(engine, "docs") == centred.config_id
    with_text, fingerprinted = check_fingerprints(engine, holder_sql(False), centred)
    assert fingerprinted == with_text > 2000
    # Fitting again would pick another sample and another configuration: refused, the file kept.
    failed(cli("refingerprint", "--table", "docs", "--fit-background", str(saved), url=url), 2, "--background")
    assert Background.load(saved) == background
    again = ok(cli("refingerprint", "--table", "docs", "--background", str(saved), "--no-progress", url=url))
    assert "nothing to do" in again.stdout
    similar = ok(cli("similar", "--table", "docs", "--id", "11", "--limit", "3", "--format", "json", url=url))
    assert len(json.loads(similar.stdout)) == 3


def test_cli_refuses_a_background_of_other_settings_and_bad_files(engine: Engine, url: str, tmp_path: Path) -> None:
    _attached(engine)
    other = tmp_path / "shingles.json"
    Background.fit([f"text number {i} with some words" for i in range(150)], Fingerprinter(shingle_size=2)).save(other)
    failed(cli("refingerprint", "--table", "docs", "--background", str(other), url=url), 2, "fitted for configuration")
    junk = tmp_path / "junk.json"
    junk.write_text("[1, 2, 3]")
    failed(cli("refingerprint", "--table", "docs", "--background", str(junk), url=url), 2, "not a simsql background")
    failed(cli("refingerprint", "--table", "docs", "--background", str(tmp_path / "missing.json"), url=url), 2, "cannot read")
    assert config_id(engine, "docs") == V2.config_id


def test_cli_fingerprint_with_a_background_equals_the_library(tmp_path: Path) -> None:
    saved = tmp_path / "bg.json"
    background = Background.fit([f"vacuum and replication notes, take {i}, words w{i * 7}" for i in range(200)])
    background.save(saved)
    result = json.loads(ok(cli("fingerprint", "the buffer cache and vacuum", "--background", str(saved), "--format", "json")).stdout)
    centred = Fingerprinter(background=background)
    assert result["unsigned"] == centred.fingerprint("the buffer cache and vacuum") and result["config_id"] == centred.config_id
    assert result["settings"]["background"]["fitted_for"] == V2.config_id
    failed(cli("fingerprint", "text", "--background", str(saved), "--shingle-size", "2"), 2, "fitted for configuration")


def test_mysql_fit_on_the_table_then_attach_it_centred(mysql_engine: Engine) -> None:
    """MySQL/MariaDB have no online refingerprint: fit, detach, attach with the background and
    backfill. The sample is drawn with the server's own random order (``RAND()``)."""
    build_docs(mysql_engine, rows=600)
    simsql.alembic.upgrade(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", ["title", "body"])
    background = fit_background(mysql_engine, "docs", sample=500)
    assert background.documents > 450
    centred = Fingerprinter(background=background)
    simsql.detach_table(mysql_engine, "docs")
    simsql.attach_table(mysql_engine, "docs", ["title", "body"], fingerprinter=centred)
    simsql.backfill(mysql_engine, "docs", workers=0)
    with mysql_engine.connect() as connection:
        rows = connection.execute(text("SELECT title, body, simhash FROM docs")).all()
    expected = [centred.fingerprint("\n".join(p for p in (t, b) if p is not None)) for t, b, _ in rows]
    assert [s for _, _, s in rows] == expected  # BIGINT UNSIGNED on MySQL: stored as Python computes it
    with pytest.raises(ConfigMismatch):
        simsql.backfill(mysql_engine, "docs", fingerprinter=V2, workers=0)


def test_mysql_cli_fits_and_saves_then_says_how_to_move_offline(mysql_engine: Engine, tmp_path: Path) -> None:
    """No online refingerprint to a background on MySQL/MariaDB (there only version 2 to 3 of the
    same settings moves online): the background is still fitted and saved, and the error gives
    the two commands that move the table, which then work as given."""
    build_docs(mysql_engine, rows=600)
    simsql.alembic.upgrade(mysql_engine)
    simsql.attach_table(mysql_engine, "docs", ["title", "body"])
    url = mysql_engine.url.render_as_string(hide_password=False)
    saved = tmp_path / "docs.json"
    result = cli("refingerprint", "--table", "docs", "--algorithm-version", "2", "--fit-background", str(saved),
                 "--sample", "400", url=url)  # fmt: skip
    failed(result, 1, "refingerprint a table online only from algorithm version 2 to version 3")
    assert saved.exists()
    advice = result.stderr.split("instead (queries find nothing until the backfill ends): ", 1)[1].strip()
    detach, attach = advice.split(" && ")
    assert attach.endswith(f"--text-column title --text-column body --no-wide --background {saved} --backfill")
    ok(cli(*detach.split()[1:], url=url))
    ok(cli(*attach.split()[1:], url=url))
    centred = Fingerprinter(background=Background.load(saved))
    with mysql_engine.connect() as connection:
        assert simsql.store.registry.read(connection, "docs", connection.execute(text("SELECT DATABASE()")).scalar_one()).config_id == centred.config_id  # type: ignore[union-attr]
        rows = connection.execute(text("SELECT title, body, simhash FROM docs")).all()
    assert [s for _, _, s in rows] == [centred.fingerprint("\n".join(p for p in (t, b) if p is not None)) for t, b, _ in rows]


def test_cli_attach_with_a_background(engine: Engine, url: str, tmp_path: Path) -> None:
    """The path for a table never attached (and for MySQL, where refingerprint is refused): attach
    it centred from the start. A file fitted for other settings is refused before anything is made."""
    build_docs(engine)
    other = tmp_path / "shingles.json"
    Background.fit([f"text number {i} with some words" for i in range(150)], Fingerprinter(shingle_size=2)).save(other)
    failed(cli("attach", "--table", "docs", "--text-column", "title", "--text-column", "body", "--background", str(other), url=url), 2, "fitted for configuration")
    with engine.connect() as connection:
        assert connection.execute(text("SELECT to_regclass('simsql_registry')")).scalar_one() is None
    saved = tmp_path / "docs.json"
    with engine.connect() as connection:
        Background.fit(connection.execute(text("SELECT body FROM docs WHERE body IS NOT NULL LIMIT 500")).scalars()).save(saved)
    ok(cli("attach", "--table", "docs", "--text-column", "title", "--text-column", "body", "--background", str(saved), "--backfill", url=url))
    centred = Fingerprinter(background=Background.load(saved))  # attach's default: version 2, as SimHashMixin
    assert config_id(engine, "docs") == centred.config_id
    with_text, fingerprinted = check_fingerprints(engine, holder_sql(False), centred)
    assert fingerprinted == with_text > 2000
