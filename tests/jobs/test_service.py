"""retrieval.jobs without worker processes: the in-process path of the embedded default, the
split of a scaled-out ingest, the queue's settings, and its state on a real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval import JobService
from retrieval.assistant import Assistant
from retrieval.config import Settings
from retrieval.errors import ConfigError
from retrieval.ingest.pipeline import BATCH_SIZE, prepare_papers
from retrieval.jobs.app import build_app, conninfo, uses_queue
from retrieval.jobs.ingest_parts import split
from retrieval.jobs.schedule import period_start, sync_period
from retrieval.jobs.staging import clear_ingest, load_part, mark_part_done, parts_done, stage_parts
from retrieval.records.paper import Author, Paper, Provenance
from retrieval.storage.database import close_databases


def _papers(count: int, *, repeat: int = 0) -> list[Paper]:
    made = [Paper(title=f"A study of queue number {n} in distributed ingest", authors=[Author(name=f"Ada Lovelace{n}")],
                  published=str(2000 + n % 20), provenance=[Provenance(source="bibtex", source_id=f"key{n}")])
            for n in range(count)]
    return made + [paper.model_copy(update={"provenance": [Provenance(source="bibtex", source_id=f"again{n}")]})
                   for n, paper in enumerate(made[:repeat])]


def test_the_parts_are_near_equal_in_order_and_each_paper_is_in_one_part() -> None:
    papers = _papers(BATCH_SIZE * 5 + 7, repeat=30)
    parts, report = split(papers, 2)
    unique, prepared = prepare_papers(papers)
    assert [paper.id for part in parts for paper in part] == [paper.id for paper in unique]
    assert report.merged_duplicates == prepared.merged_duplicates == 30
    assert [len(part) for part in parts] == [BATCH_SIZE * 5 // 2 + 4, BATCH_SIZE * 5 // 2 + 3]  # near-equal
    assert len(split(papers, 50)[0]) == 6  # never more parts than batches
    assert split([], 3)[0] == []


def test_without_a_queue_jobs_run_in_this_process(tmp_path: Path) -> None:
    """The embedded default: no database URL, no queue setting: no queue process is needed and
    the work is the Assistant's, exactly as without the job service."""
    settings = Settings(_env_file=None, data_dir=tmp_path / "data", chroma_url=None, database_url=None)
    assistant = Assistant(settings, chat_model=None)
    service = JobService(assistant)
    assert service.queued is False
    assert service.status().configured is False
    report = service.sync()  # an empty roster: nothing to fetch, no network
    assert report.scholars == [] and report.ok


def test_the_queue_needs_postgresql(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path, job_queue=True, database_url=None)
    with pytest.raises(ConfigError, match="PostgreSQL") as raised:
        uses_queue(settings)
    assert "PAPERBOT_DATABASE_URL" in (raised.value.hint or "")
    assert conninfo(settings) is None
    with pytest.raises(ConfigError):
        build_app(settings)


def test_every_process_computes_the_same_period_starts() -> None:
    settings = Settings(_env_file=None, sync_interval_hours=0.5)
    assert sync_period(settings) == 1800
    assert period_start(999_999_010.5, 1800) == period_start(1_000_000_799.9, 1800) == 999_999_000
    assert period_start(1_000_000_800.0, 1800) == 1_000_000_800
    assert sync_period(Settings(_env_file=None)) is None


@pytest.mark.postgres
def test_staged_parts_round_trip_and_the_queue_reports_its_state(tmp_path: Path, postgres_databases) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path / "data", database_url=postgres_databases(),
                        job_queue=True, chroma_url=None)
    try:
        papers = _papers(5)
        ingest_id = stage_parts(settings, [papers[:3], papers[3:]])
        assert [paper.model_dump() for paper in load_part(settings, ingest_id, 1)] == [p.model_dump() for p in papers[3:]]
        assert parts_done(settings, ingest_id) == []
        mark_part_done(settings, ingest_id, 0, {"added": ["x"]})
        assert parts_done(settings, ingest_id) == [{"added": ["x"]}]
        clear_ingest(settings, ingest_id)
        assert parts_done(settings, ingest_id) == []

        service = JobService(Assistant(settings, chat_model=None))
        assert service.queued is True
        app = build_app(settings)
        with app.open():
            app.tasks["paperbot.sync"].defer()
        status = service.status()
        assert (status.configured, status.waiting, status.running, status.failed) == (True, 1, 0, 0)
        assert status.workers == []
        assert "no worker is alive" in status.describe()
    finally:
        close_databases()


@pytest.mark.postgres
def test_finished_jobs_and_their_rows_are_deleted_after_the_retention(tmp_path: Path, postgres_databases) -> None:
    """A real PostgreSQL queue: a finished job, its result, progress, Slack message and an abandoned
    ingest's staged records go once older than the retention; a waiting job and newer rows stay."""
    import asyncio
    from datetime import UTC, datetime, timedelta

    from procrastinate.jobs import Status
    from sqlalchemy import func, insert, select

    from retrieval.jobs.retention import PrunedRows, prune_finished, retention
    from retrieval.jobs.staging import save_progress, save_result
    from retrieval.storage.database import open_database
    from retrieval.storage.schema import job_parts, job_progress, job_results, slack_jobs

    settings = Settings(_env_file=None, data_dir=tmp_path / "data", database_url=postgres_databases(),
                        job_queue=True, chroma_url=None)
    assert retention(settings) == timedelta(days=7)
    assert retention(Settings(_env_file=None, job_retention_days=0)) is None
    try:
        open_database(settings)  # upgrades the new database: the schema, the queue's included
        app = build_app(settings)

        async def scenario() -> tuple[list[str], list[str], PrunedRows, PrunedRows]:
            async with app.open_async():
                done_id = await app.tasks["paperbot.sync"].defer_async()
                waiting_id = await app.tasks["paperbot.repair"].defer_async()
                [job] = [j for j in await app.job_manager.list_jobs_async() if j.id == done_id]
                await app.job_manager.finish_job(job, status=Status.SUCCEEDED, delete_job=False)
                save_result(settings, done_id, "paperbot.sync", {"new": 0})
                save_progress(settings, done_id, 2, 2)
                stage_parts(settings, [_papers(2)])
                with open_database(settings).writing("a finished Slack-started job") as connection:
                    connection.execute(insert(slack_jobs).values(
                        job_id=done_id, channel="C1", message_ts="1.0", requested_by="U1", replica="r",
                        created_at="2026-01-01T00:00:00+00:00", finished_at="2026-01-01T00:00:01+00:00"))
                kept = await prune_finished(app, settings, older_than=timedelta(days=7))  # all of it is new
                before = sorted(str(j.status) for j in await app.job_manager.list_jobs_async())
                later = datetime.now(UTC) + timedelta(minutes=1)  # the rows above are a minute old then
                pruned = await prune_finished(app, settings, older_than=timedelta(0), now=later)
                after = sorted(str(j.status) for j in await app.job_manager.list_jobs_async())
                assert waiting_id is not None
                return before, after, kept, pruned

        before, after, kept, pruned = asyncio.run(scenario())
        assert kept.slack_messages == 1 and kept.results == 0  # the Slack row was dated in January
        assert before == ["succeeded", "todo"] and after == ["todo"]  # the waiting job stays
        assert (pruned.results, pruned.progress, pruned.staged_parts) == (1, 1, 1)
        with open_database(settings).reading("count") as connection:
            for table in (job_results, job_progress, job_parts, slack_jobs):
                assert connection.execute(select(func.count()).select_from(table)).scalar() == 0
    finally:
        close_databases()
