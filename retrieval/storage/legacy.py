"""The side files of a data dir made before the database: read once, when it is upgraded.

``roster.json`` (the roster, format version 1) and ``follows.sqlite3`` (follows, their inbox and
what each announced) are imported by revision ``0001_roster_and_follows``; both files are left
where they were, untouched, and never read again by a current paperbot (they stay as a
backup). A file that cannot be read is a ``StorageError`` that names it and how to fix it, and
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
    path = data_dir / FOLLOWS_FILE
    empty: dict[str, list[dict[str, Any]]] = {"follows": [], "follow_inbox": [], "follow_announced": []}
    if not data_dir.is_dir() or not path.exists():
        return empty
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise _damaged(path, exc) from None
    try:
        db.row_factory = sqlite3.Row
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        sources = {"follows": "follows", "follow_inbox": "inbox", "follow_announced": "announced"}
        return {target: [dict(row) for row in db.execute(f"SELECT * FROM {source} ORDER BY rowid")]
                if source in tables else [] for target, source in sources.items()}
    except sqlite3.Error as exc:
        raise _damaged(path, exc) from None
    finally:
        db.close()


def _damaged(path: Path, exc: sqlite3.Error) -> StorageError:
    return StorageError(f"Cannot read the follows store {path} to import it: {exc}; it was left untouched.",
                        hint="Move the file away to start without follows, or restore it from a backup.")
