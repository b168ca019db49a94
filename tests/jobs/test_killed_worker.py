"""Two workers ingest the 40 real publication lists as two parts; one is killed mid-part.

``paperbot ingest --jobs 2`` stages the lists' records in two parts; workers ``a`` and ``b``
(separate data dirs: they share only the PostgreSQL database and the Chroma server) take one
each. The first worker to commit a batch of its part is killed with SIGKILL before its job
ends (after ``batch 1/N written`` in its log); the other worker finishes its own part, finds the dead worker's
job stalled (3 missed heartbeats) and runs it again. Then:

* the submitter reports success, and the dead worker's job shows a second attempt;
* the records, provenance included, are exactly those of a single-process ``paperbot ingest``
  of the same files into a deployment of its own (no queue);
* the record store, Chroma and the lexical index agree (``doctor``): nothing lost, nothing twice;
  ``doctor`` lists the survivor alive (the killed worker stalled), and ``doctor --repair --queue``
  has the survivor re-index as a job.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from tests.jobs.conftest import ROOT, Deployment
from tests.support.patience import patience

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

LISTS = ROOT.parent / "shared" / "datasets" / "scholars-real" / "bib"


def _lists() -> list[Path]:
    files = sorted(LISTS.glob("*.bib"))
    if len(files) < 40:
        pytest.skip(f"the scholars-real publication lists are not at {LISTS} (found {len(files)} of 40)")
    return files


def _query(url: str, sql: str) -> list[tuple]:
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as connection:
        return connection.execute(sql.encode()).fetchall()  # the test's own statements


def _records(deployment: Deployment) -> dict[str, dict]:
    code, out, err = deployment.cli("export")
    assert code == 0, err[-3000:]
    records = [json.loads(line) for line in out.splitlines() if line.strip()]
    by_id = {record["id"]: record for record in records}
    assert len(by_id) == len(records)  # no record twice
    return by_id


def _kill_the_first_writer(deployment: Deployment, workers: dict[str, subprocess.Popen[str]],
                           submitter: subprocess.Popen[str]) -> tuple[str, int]:
    """SIGKILL the first worker that has committed the first batch of its part and not ended its
    job; returns (its name, the id of the job it was running)."""
    deadline = time.monotonic() + patience(300)
    while time.monotonic() < deadline:
        if submitter.poll() is not None:
            raise AssertionError(f"the ingest ended before a worker was killed: {submitter.communicate()[1][-3000:]}")
        for name, process in workers.items():
            log = deployment.log(name)
            if "batch 1/" not in log or ": done" in log:
                continue
            process.send_signal(signal.SIGKILL)  # a batch of its part is committed, the others are not all
            process.wait(timeout=30)
            job_id = re.search(r"job (\d+) \(paperbot.ingest_part\)[^\n]*batch 1/", log)
            assert job_id is not None and ": done" not in deployment.log(name)
            return name, int(job_id[1])
        time.sleep(0.02)  # polling other processes' progress
    raise AssertionError("no worker started writing within 300 s")


def test_a_worker_killed_mid_part_leaves_the_same_records_as_one_process(
        deployment: Deployment, postgres_databases) -> None:
    files = [str(path) for path in _lists()]

    # the reference: one process, its own database and collection, no queue
    reference = Deployment(deployment.root / "reference", postgres_databases(), deployment.chroma_url,
                           deployment.model_cache)
    reference.root.mkdir()
    code, out, err = reference.cli("ingest", "--json", *files, PAPERBOT_JOB_QUEUE="false")
    assert code == 0, err[-3000:]
    expected = _records(reference)
    assert len(expected) > 1000

    workers = {name: deployment.worker(name) for name in ("a", "b")}
    submitter = subprocess.Popen([sys.executable, "-m", "bot.cli", "ingest", "--jobs", "2", "--json", *files],
                                 cwd=deployment.root, env=deployment.env(deployment.root / "submitter"),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        killed, job_id = _kill_the_first_writer(deployment, workers, submitter)
        out, err = submitter.communicate(timeout=patience(300))
    finally:
        if submitter.poll() is None:
            submitter.kill()
            submitter.communicate()
    assert submitter.returncode == 0, err[-3000:]
    assert "2/2 parts written" in err
    report = json.loads(out)
    assert report["merged_duplicates"] > 0

    survivor = next(name for name in workers if name != killed)
    assert f"job {job_id} (paperbot.ingest_part): done" not in deployment.log(killed)
    assert f"job {job_id} (paperbot.ingest_part, attempt 2)" in deployment.log(survivor)
    assert _query(deployment.database_url, f"SELECT status, attempts FROM procrastinate_jobs WHERE id = {job_id}") == [
        ("succeeded", 2)]  # procrastinate counts the attempts that ended: the killed one, then the retry

    # the same records and provenance as one process, field for field
    found = _records(deployment)
    assert set(found) == set(expected)
    assert [found[record_id] for record_id in sorted(found)] == [expected[record_id] for record_id in sorted(expected)]

    # every record once in each store
    code, out, err = deployment.cli("doctor", "--json", "--no-model")
    assert code == 0, err[-3000:]
    doctor = json.loads(out)
    assert doctor["records"] == doctor["vectors"] == len(expected)
    assert doctor["missing_vectors"] == [] and doctor["orphan_vectors"] == [] and doctor["stale_vectors"] == []
    assert doctor["queue"]["failed"] == 0 and doctor["queue"]["waiting"] == 0
    alive = [worker for worker in doctor["queue"]["workers"] if not worker["stalled"]]
    assert [worker["name"].rsplit(":", 1)[1] for worker in alive] == [str(workers[survivor].pid)]

    # a re-index as a job: the survivor runs it, the submitter prints its report
    code, out, err = deployment.cli("doctor", "--repair", "--queue", "--json", "--no-model")
    assert code == 0, err[-3000:]
    repaired = json.loads(out)
    assert repaired["repaired"] is True and repaired["records"] == len(expected)
    assert "(paperbot.repair): repair done" in deployment.log(survivor)
