"""The side files of a data dir made before the database: read once, when it is upgraded.

``roster.json`` (the roster, format version 1) and ``follows.sqlite3`` (follows, their inbox and
what each announced) are imported by revision ``0001_roster_and_follows``, ``slack/state.sqlite3``
(answers, votes, threads, deliveries) by ``0002_slack_state``; the files are left where they
were, untouched, and never read again by a current paperbot (they stay as a backup). A file that cannot be read is a ``StorageError`` that names it and how to fix it, and
the upgrade imports nothing (it is one transaction). A read-only data dir, which cannot be
upgraded, reads its roster from ``roster.json`` directly (``read_roster``).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from retrieval.errors import StorageError
from retrieval.results import Scholar

ROSTER_FILE = "roster.json"
FOLLOWS_FILE = "follows.sqlite3"
SLACK_FILE = "slack/state.sqlite3"


class _RosterFile(BaseModel):
    version: int = 1
    scholars: list[Scholar] = Field(default_factory=list)


def read_roster(path: Path) -> list[Scholar]:
    """The scholars of a ``roster.json``, in file order ([] when there is no such file)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StorageError(f"Cannot read the roster {path}: {exc.strerror or exc}.") from None
    try:
        return _RosterFile.model_validate(json.loads(text)).scholars
    except (json.JSONDecodeError, ValidationError) as exc:
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else exc.errors()[0]["msg"]
        raise StorageError(
            f"The roster {path} is damaged ({detail}); it was left untouched.",
            hint="Fix the JSON by hand, or move the file away to start an empty roster.",
        ) from None


def roster_rows(data_dir: Path) -> list[dict[str, Any]]:
    """The rows of the ``scholars`` table for the data dir's ``roster.json``, in its order ([] when
    the data dir is no directory: a server's database needs none)."""
    if not data_dir.is_dir():
        return []
    return [scholar.model_dump(mode="json") for scholar in read_roster(data_dir / ROSTER_FILE)]


def follows_rows(data_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """The data dir's ``follows.sqlite3`` as rows of ``follows``, ``follow_inbox`` and
    ``follow_announced`` (ids kept); empty lists when there is no such file. Opened read-only."""
    sources = {"follows": "follows", "follow_inbox": "inbox", "follow_announced": "announced"}
    return _tables(data_dir, FOLLOWS_FILE, sources, label="the follows store", lost="follows")


def slack_rows(data_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """The data dir's ``slack/state.sqlite3`` as rows of the ``slack_*`` tables (answers in the order
    they were saved, their cited ids decoded from JSON); empty lists when there is no such file."""
    sources = {"slack_answers": "answers", "slack_feedback": "feedback", "slack_threads": "threads",
               "slack_deliveries": "deliveries"}
    rows = _tables(data_dir, SLACK_FILE, sources, label="the Slack state file", lost="the Slack state")
    path = data_dir / SLACK_FILE
    for table in ("slack_answers", "slack_feedback"):
        for row in rows[table]:
            try:
                row["cited_ids"] = json.loads(row["cited_ids"])
            except (TypeError, json.JSONDecodeError):
                raise _damaged(path, f"cited ids that are not JSON: {row['cited_ids']!r}", label="the Slack state file",
                               lost="the Slack state") from None
    return rows


def _tables(data_dir: Path, name: str, sources: dict[str, str], *, label: str, lost: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of each ``sources`` table (target name -> table in the file), in rowid order."""
    path = data_dir / name
    if not data_dir.is_dir() or not path.exists():
        return {target: [] for target in sources}
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise _damaged(path, str(exc), label=label, lost=lost) from None
    try:
        db.row_factory = sqlite3.Row
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return {target: [dict(row) for row in db.execute(f"SELECT * FROM {source} ORDER BY rowid")]
                if source in tables else [] for target, source in sources.items()}
    except sqlite3.Error as exc:
        raise _damaged(path, str(exc), label=label, lost=lost) from None
    finally:
        db.close()


def _damaged(path: Path, detail: str, *, label: str, lost: str) -> StorageError:
    return StorageError(f"Cannot read {label} {path} to import it: {detail}; it was left untouched.",
                        hint=f"Move the file away to start without {lost}, or restore it from a backup.")
