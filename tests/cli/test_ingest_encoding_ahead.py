"""`paperbot ingest` starts its encoding process before its own imports, and the ingest uses it.

In this process (``paperbot_here``), with the real child over the session's encoder export.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from bot.commands import ingest as ingest_command
from retrieval.config import Settings
from retrieval.index import writes
from retrieval.index.encoders import encode_ahead, worker_process
from retrieval.index.encoders.base import Encoder
from tests.cli.conftest import paperbot_here
from tests.support.model_cache import link_model_cache


@pytest.fixture()
def ahead_encoders(monkeypatch: pytest.MonkeyPatch) -> list[Encoder]:
    made: list[Encoder] = []
    real = writes.ahead_of

    @contextmanager
    def spied(*args, **kwargs) -> Iterator:
        with real(*args, **kwargs) as encoder:
            made.append(encoder)
            if isinstance(encoder, encode_ahead.AheadEncoder):
                # deterministic counts below: texts asked for before the child is ready are encoded here
                assert encoder.process.wait_ready(60), encoder.process.failure
            yield encoder

    monkeypatch.setattr(writes, "ahead_of", spied)
    return made


@pytest.fixture()
def started(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every encoding process the command starts in advance (still started for real)."""
    import retrieval

    real = retrieval.start_encoding_process  # resolved (and kept by the lazy surface) before patching
    assert real is worker_process.start_encoding_process
    calls: list[int] = []

    def counted() -> None:
        calls.append(1)
        real()

    monkeypatch.setattr(worker_process, "start_encoding_process", counted)
    monkeypatch.setattr(retrieval, "start_encoding_process", counted)
    return calls


@pytest.mark.slow
def test_a_large_ingest_is_encoded_by_the_process_started_first(tmp_path, small_corpus, monkeypatch,
                                                                ahead_encoders, started):
    monkeypatch.setattr(ingest_command, "ENCODE_AHEAD_MIN_BYTES", small_corpus.stat().st_size)
    monkeypatch.setattr(writes, "AHEAD_RULE", writes.AheadRule(started_in_advance=1))
    data_dir = link_model_cache(tmp_path / "data")
    run = paperbot_here("ingest", str(small_corpus), "--json", data_dir=data_dir)
    assert run.code == 0, run.stderr
    added = run.json()["added"]
    assert started == [1]
    assert len(ahead_encoders) == 1
    encoder = ahead_encoders[0]
    assert isinstance(encoder, encode_ahead.AheadEncoder)
    assert (encoder.from_process, encoder.in_process) == (added, 0)
    assert worker_process.take_started_process() is None  # taken by the ingest, and closed


@pytest.mark.slow
def test_switched_off_the_ingest_encodes_in_its_own_process(tmp_path, small_corpus, monkeypatch,
                                                           ahead_encoders, started):
    monkeypatch.setattr(ingest_command, "ENCODE_AHEAD_MIN_BYTES", small_corpus.stat().st_size)
    monkeypatch.setattr(writes, "AHEAD_RULE", writes.AheadRule(started_in_advance=1, started_here=1))
    data_dir = link_model_cache(tmp_path / "data")
    run = paperbot_here("ingest", str(small_corpus), "--json", data_dir=data_dir, PAPERBOT_ENCODE_AHEAD="false")
    assert run.code == 0, run.stderr
    assert run.json()["added"] > 0
    assert started == [] and ahead_encoders == []


@pytest.mark.slow
def test_small_files_and_bad_paths_start_nothing(tmp_path, small_corpus, ahead_encoders, started):
    data_dir = link_model_cache(tmp_path / "data")
    run = paperbot_here("ingest", str(small_corpus), "--json", data_dir=data_dir)
    assert run.code == 0, run.stderr
    missing = paperbot_here("ingest", str(tmp_path / "nowhere.bib"), data_dir=data_dir)
    assert missing.code == 2 and "No such file" in missing.stderr
    assert started == [] and ahead_encoders == []


def test_prepare_counts_the_size_of_every_file_and_heeds_the_switch(tmp_path: Path, started, monkeypatch):
    import argparse

    monkeypatch.setattr(ingest_command, "ENCODE_AHEAD_MIN_BYTES", 100)
    first, second = tmp_path / "a.bib", tmp_path / "b.bib"
    first.write_bytes(b"x" * 60)
    second.write_bytes(b"x" * 40)
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")
    ingest_command.prepare(argparse.Namespace(paths=[first, tmp_path, tmp_path / "missing.bib"]), settings)
    assert started == []
    switched_off = Settings(_env_file=None, data_dir=tmp_path / "data", encode_ahead=False)
    ingest_command.prepare(argparse.Namespace(paths=[first, second]), switched_off)
    assert started == []
    ingest_command.prepare(argparse.Namespace(paths=[first, second]), settings)
    assert started == [1]
    process = worker_process.take_started_process()
    assert process is not None
    worker_process.end(process)
    assert process.returncode == 0
