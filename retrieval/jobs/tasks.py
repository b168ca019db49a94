"""What each job does, given the ``Assistant`` of the process that runs it.

The same functions run in a ``paperbot worker`` (``app``'s tasks call them) and in the calling
process when there is no queue (``service``), so a job does the same work wherever it runs.
Each returns JSON-ready data: what the job's submitter is told.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from retrieval.assistant import Assistant
    from retrieval.results import SyncEvent


def run_sync(assistant: Assistant, progress: Callable[[SyncEvent], None] | None = None) -> dict[str, Any]:
    """``Assistant.sync`` of the whole roster, then its new papers queued for the follow alerts
    (as ``paperbot sync`` does); the ``SyncReport`` as JSON. An empty roster syncs nothing.
    ``progress`` is told the sync's events (``SyncEvent``: a scholar started, done...)."""
    report = assistant.fetching.sync(progress=progress)
    if report.new_paper_ids:
        assistant.follows.note_new_papers(report.new_paper_ids)
    return report.model_dump(mode="json")


def run_repair(assistant: Assistant, *, force: bool = False) -> dict[str, Any]:
    """``Assistant.repair`` (the re-index of what disagrees); its ``ConsistencyReport`` as JSON."""
    report = assistant.upkeep.repair(force=force)
    return {**dataclasses.asdict(report), "ok": report.ok}


def run_ingest_part(assistant: Assistant, ingest_id: str, part: int,
                    say: Callable[[str], None] | None = None) -> dict[str, int]:
    """Write one staged part of a scaled-out ingest (``ingest_parts.write_part``) and mark it
    done with its counts. A part already done (a retry after its worker died between the last
    write and the mark) is written again: the records merge with themselves and nothing changes."""
    from retrieval.jobs.ingest_parts import write_part
    from retrieval.jobs.staging import load_part, mark_part_done

    papers = load_part(assistant.settings, ingest_id, part)
    report = write_part(assistant, papers, say=say)
    counts = {"records": len(papers), "added": len(report.added), "updated": len(report.updated),
              "unchanged": len(report.unchanged)}
    mark_part_done(assistant.settings, ingest_id, part, {
        "added": report.added, "updated": report.updated, "unchanged": report.unchanged,
        "warnings": [{"item": item.item, "reason": item.reason} for item in report.warnings]})
    return counts
