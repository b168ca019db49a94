"""A read-only data dir (a snapshot on a shared volume, a backup): every read works, nothing in
it changes, and every write fails at once with the real cause, never with advice to run
`paperbot doctor`, which could not write either (issue #27: "circular advice").

Real read-only-ness, not a mock: each command runs as a subprocess for which the data dir is a
read-only bind mount (as root) or has lost its write permission (any other user); see
``tests/support/read_only.py``, which skips with the reason when neither can be done here. One
index of 40 records of the bundled sample is built per module, then read in two states: as the
ingest left it (records in the SQLite write-ahead logs, no BM25 index saved yet) and as a clean
backup holds it (every log merged into its file, no -wal or -shm).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from bench.common import clean_env
from tests.reliability.helpers import PAPERBOT, Run, link_model_cache, paperbot
from tests.support.patience import patience
from tests.support.read_only import read_only_runner, tree_state

pytestmark = pytest.mark.slow

RECORDS = 40
QUESTION = "What is known about modular forms of half integral weight?"
AUTHOR = "Dohoon Choi"  # two of the 40 records
READS = {  # what each read must give: a check of its --json output
    "search": (["search", "modular forms of half integral weight", "--json"], lambda out: out["results"]),
    "ask": (["ask", QUESTION, "--json"], lambda out: out["citations"] and not out["abstained"]),
    "summarize": (["summarize", AUTHOR, "--json"], lambda out: len(out["papers"]) == 2),
    "collaborators": (["collaborators", "modular forms", "--json"], lambda out: out["scholars"]),
    "stats": (["stats", "--json"], lambda out: out["papers"] == RECORDS),
}
WRITES = {
    "ingest": ["ingest", "SAMPLE"],
    "doctor --repair": ["doctor", "--repair"],
    "scholars add": ["scholars", "add", "Ada Lovelace"],
}


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lines = Path(str(resources.files("retrieval.sample") / "arxiv_sample.jsonl")).read_text(encoding="utf-8")
    path = tmp_path_factory.mktemp("sample") / "sample.jsonl"
    path.write_text("".join(lines.splitlines(keepends=True)[:RECORDS]), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory, model_cache: Path, sample: Path) -> Path:
    data_dir = link_model_cache(tmp_path_factory.mktemp("read-only") / "data", model_cache)
    run = paperbot("ingest", str(sample), "--json", data_dir=data_dir)
    assert run.code == 0, run.stderr
    assert run.json()["added"] == RECORDS
    added = paperbot("scholars", "add", AUTHOR, data_dir=data_dir)  # the database exists, its log not merged
    assert added.code == 0, added.stderr
    assert not (data_dir / "lexical").exists()  # the first search builds it: here it has to do so in memory
    return data_dir


def _merge_logs(data_dir: Path) -> None:
    """Every SQLite file of the data dir as a clean backup holds it: its log merged, no -wal or -shm."""
    for path in data_dir.rglob("*.sqlite3"):
        db = sqlite3.connect(path)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()  # the last connection of a WAL file removes its -wal and -shm
        assert not path.with_name(path.name + "-wal").exists(), path


@pytest.fixture(params=["as-ingested", "clean-backup"])
def snapshot(request: pytest.FixtureRequest, ingested: Path, tmp_path: Path) -> Path:
    data_dir = tmp_path / "data"
    shutil.copytree(ingested, data_dir)
    if request.param == "clean-backup":
        _merge_logs(data_dir)
    else:
        assert any(data_dir.rglob("*.sqlite3-wal")), "the ingest left its records in a write-ahead log"
    return data_dir


def _run(wrap, args: list[str], data_dir: Path) -> Run:
    done = subprocess.run(wrap([str(PAPERBOT), *args]), capture_output=True, text=True, timeout=patience(300),
                          cwd=data_dir.parent, env=clean_env(data_dir))
    return Run(done.returncode, done.stdout, done.stderr)


def _complaints(stderr: str) -> list[str]:
    """Lines of stderr about a failed write (what a read of a read-only dir must not print)."""
    return [line for line in stderr.splitlines()
            if "Traceback" in line or any(word in line.lower() for word in ("read-only", "readonly", "could not"))]


def test_reads_work_and_change_nothing_and_writes_name_the_cause(snapshot: Path, sample: Path) -> None:
    before = tree_state(snapshot)
    with read_only_runner(snapshot) as wrap:
        reads = {name: _run(wrap, args, snapshot) for name, (args, _) in READS.items()}
        export = _run(wrap, ["export"], snapshot)
        roster = _run(wrap, ["scholars", "list", "--json"], snapshot)
        doctor = _run(wrap, ["doctor", "--json"], snapshot)
        writes = {name: _run(wrap, [str(sample) if arg == "SAMPLE" else arg for arg in args], snapshot)
                  for name, args in WRITES.items()}
    assert tree_state(snapshot) == before, "a command changed the read-only data dir"

    for name, (_, check) in READS.items():
        run = reads[name]
        assert run.code == 0, f"{name}: {run.stderr[-2000:]}"
        assert check(json.loads(run.stdout)), f"{name} gave no result: {run.stdout[:1000]}"
        assert _complaints(run.stderr) == [], f"{name}: {run.stderr[-2000:]}"
    assert export.code == 0 and len(export.stdout.splitlines()) == RECORDS, export.stderr
    assert roster.code == 0, roster.stderr
    assert [scholar["name"] for scholar in roster.json()] == [AUTHOR]  # read from the database, read-only

    expected = "a read-only file system" if os.geteuid() == 0 else "no write permission for "
    assert doctor.code == 0, doctor.stderr
    report = doctor.json()
    assert report["ok"] and report["records"] == report["vectors"] == RECORDS
    assert report["read_only"].startswith(expected)
    assert report["database"]["current"] is True

    for name, run in writes.items():
        assert run.code == 2, f"{name}: exit {run.code}\n{run.stderr[-2000:]}"
        line = run.last_error_line
        assert line.startswith("paperbot: Cannot ") and f"the data dir {snapshot} is read-only ({expected}" in line
        assert "PAPERBOT_DATA_DIR at a writable copy" in line, line
        assert "doctor" not in run.stderr and "Traceback" not in run.stderr, f"{name}: {run.stderr}"
