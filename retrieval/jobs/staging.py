"""What jobs and their submitters hand each other through the database.

A scaled-out ingest stages its records in ``job_parts`` (one row per part: the records as JSON
lines), so the workers need no shared filesystem, only the database; the job that writes a
part marks it done with its counts. A job whose submitter waits for an outcome (a sync, a
repair) leaves it in ``job_results``, and its progress, while it runs, in ``job_progress``. All of it through ``storage.database`` (typed errors).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, func, insert, select, update

from retrieval.config import Settings
from retrieval.errors import StorageError
from retrieval.records.paper import Paper
from retrieval.storage.database import open_database
from retrieval.storage.schema import job_parts, job_progress, job_results


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def stage_parts(settings: Settings, parts: Sequence[Sequence[Paper]]) -> str:
    """Stage every part of a new ingest in one transaction; returns the ingest's id."""
    ingest_id = uuid.uuid4().hex
    rows = [{"ingest_id": ingest_id, "part": number, "parts": len(parts), "created_at": _now(),
             "records": "\n".join(paper.model_dump_json(exclude_none=True) for paper in papers)}
            for number, papers in enumerate(parts)]
    with open_database(settings).writing("stage an ingest's records for the workers") as connection:
        if rows:
            connection.execute(insert(job_parts), rows)
    return ingest_id


def load_part(settings: Settings, ingest_id: str, part: int) -> list[Paper]:
    """The records staged as ``part`` of ``ingest_id``; ``StorageError`` when it is not staged."""
    with open_database(settings).reading("read a staged ingest part") as connection:
        text = connection.execute(select(job_parts.c.records).where(
            job_parts.c.ingest_id == ingest_id, job_parts.c.part == part)).scalar()
    if text is None:
        raise StorageError(f"Part {part} of ingest {ingest_id} is not staged in the database (it was cleared).",
                           hint="Submit the ingest again: `paperbot ingest --jobs N FILE...`.")
    return [Paper.model_validate_json(line) for line in text.splitlines() if line.strip()]


def mark_part_done(settings: Settings, ingest_id: str, part: int, report: dict[str, Any]) -> None:
    with open_database(settings).writing("mark an ingest part done") as connection:
        connection.execute(update(job_parts).where(job_parts.c.ingest_id == ingest_id, job_parts.c.part == part)
                           .values(done_at=_now(), report=report))


def parts_done(settings: Settings, ingest_id: str) -> list[dict[str, Any]]:
    """The reports of the parts of ``ingest_id`` written so far."""
    with open_database(settings).reading("read an ingest's progress") as connection:
        rows = connection.execute(select(job_parts.c.report).where(
            job_parts.c.ingest_id == ingest_id, job_parts.c.done_at.is_not(None))).all()
    return [dict(row[0] or {}) for row in rows]


def clear_ingest(settings: Settings, ingest_id: str) -> None:
    """Drop the staged records of a finished ingest."""
    with open_database(settings).writing("clear a finished ingest's staged records") as connection:
        connection.execute(delete(job_parts).where(job_parts.c.ingest_id == ingest_id))


def staged_ingests(settings: Settings) -> int:
    """How many ingests have records staged (finished ones are cleared by their submitter)."""
    with open_database(settings).reading("count staged ingests") as connection:
        return int(connection.execute(select(func.count(func.distinct(job_parts.c.ingest_id)))).scalar() or 0)


def save_result(settings: Settings, job_id: int, task: str, result: dict[str, Any]) -> None:
    """Keep what job ``job_id`` reports for its submitter (a retried job's last attempt wins)."""
    with open_database(settings).writing("save a job's result") as connection:
        connection.execute(delete(job_results).where(job_results.c.job_id == job_id))
        connection.execute(insert(job_results).values(job_id=job_id, task=task, result=result, finished_at=_now()))


def load_result(settings: Settings, job_id: int) -> dict[str, Any] | None:
    with open_database(settings).reading("read a job's result") as connection:
        value = connection.execute(select(job_results.c.result).where(job_results.c.job_id == job_id)).scalar()
    return dict(value) if value is not None else None


def save_progress(settings: Settings, job_id: int, done: int, total: int, message: str = "") -> None:
    """Record that job ``job_id`` has done ``done`` of ``total`` (the latest write wins)."""
    with open_database(settings).writing("save a job's progress") as connection:
        connection.execute(delete(job_progress).where(job_progress.c.job_id == job_id))
        connection.execute(insert(job_progress).values(job_id=job_id, done=done, total=total, message=message,
                                                       updated_at=_now()))


def load_progress(settings: Settings, job_id: int) -> tuple[int, int, str]:
    """(done, total, message) of job ``job_id`` as it last reported; (0, 0, "") before its first report."""
    with open_database(settings).reading("read a job's progress") as connection:
        row = connection.execute(select(job_progress.c.done, job_progress.c.total, job_progress.c.message)
                                 .where(job_progress.c.job_id == job_id)).first()
    return (int(row[0]), int(row[1]), str(row[2])) if row is not None else (0, 0, "")
