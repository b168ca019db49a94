"""The job commands on the embedded default (no database URL, no queue): `ingest --jobs N` and
`sync --queue` run in the process, with the same output as without the option; `doctor` adds
nothing (and `--queue` goes with `--repair` only); `worker` refuses with what to set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import paperbot_here
from tests.reliability.helpers import bib_entries


@pytest.mark.slow
def test_ingest_with_jobs_runs_here_and_reports_what_a_plain_ingest_does(tmp_path: Path, model_cache: Path) -> None:
    bib = tmp_path / "refs.bib"
    bib.write_text(bib_entries(40), encoding="utf-8")
    plain = paperbot_here("ingest", "--json", str(bib), data_dir=tmp_path / "plain")
    jobs = paperbot_here("ingest", "--jobs", "3", "--json", str(bib), data_dir=tmp_path / "jobs")
    assert plain.code == jobs.code == 0, jobs.stderr
    assert json.loads(jobs.stdout) == json.loads(plain.stdout)
    assert "part" not in jobs.stderr  # no queue: no parts, no jobs followed


def test_sync_queue_runs_here_without_a_queue(tmp_path: Path) -> None:
    run = paperbot_here("sync", "--queue", "--json", data_dir=tmp_path / "data")
    assert run.code == 2 and "roster is empty" in run.stderr  # the same refusal as `paperbot sync`
    doctor = paperbot_here("doctor", "--json", "--no-model", data_dir=tmp_path / "data")
    assert doctor.code == 0 and "queue" not in json.loads(doctor.stdout)
    wrong = paperbot_here("doctor", "--queue", data_dir=tmp_path / "data")
    assert wrong.code == 2 and "--repair" in wrong.stderr


def test_worker_without_a_queue_says_what_to_set(tmp_path: Path) -> None:
    run = paperbot_here("worker", data_dir=tmp_path / "data")
    assert run.code == 2
    assert "PAPERBOT_JOB_QUEUE" in run.stderr
    queued = paperbot_here("worker", data_dir=tmp_path / "data", PAPERBOT_JOB_QUEUE="true")
    assert queued.code == 2 and "PostgreSQL" in queued.stderr and "PAPERBOT_DATABASE_URL" in queued.stderr
