"""The index's statistics (`paperbot stats`, the Slack App Home).

Part of the public contracts of ``retrieval.results`` (import them from there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

if TYPE_CHECKING:
    pass


class IndexStats(BaseModel):
    """What is indexed, for `paperbot stats` and the Slack App Home."""

    papers: int
    scholars: int
    last_sync: str | None
    by_source: dict[str, int]
    by_year: dict[int, int]
    # records per file their entries were read from (``Provenance.file``: absolute paths), sorted;
    # what `paperbot remove --source FILE` and `ingest --prune` work by
    by_file: dict[str, int] = {}
