"""The side files of a data dir made before the database: read once, when it is upgraded.

``roster.json`` (the roster, format version 1) and ``follows.sqlite3`` (follows, their inbox and
what each announced) are imported by revision ``0001_roster_and_follows``, ``slack/state.sqlite3``
(answers, votes, threads, deliveries) by ``0002_slack_state``; the files are left where they
were, untouched, and never read again by a current paperbot (they stay as a backup). A file that cannot be read is a ``StorageError`` that names it and how to fix it, and
the upgrade imports nothing (it is one transaction); except a damaged ``roster.json`` (not JSON,
or not a roster): ``roster_rows`` raises ``DamagedRoster``, the revision imports no scholar and
the upgrade goes on with everything else, then sets the file aside (``set_aside``: renamed to
``roster.damaged.json``, its bytes kept) once the upgrade is committed, and says so;
``set_aside_files`` lists such files for ``paperbot doctor``. A read-only data dir, which cannot be
upgraded, reads its roster from ``roster.json`` directly (``read_roster``).
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from retrieval.errors import StorageError
from retrieval.results import Scholar

ROSTER_FILE = "roster.json"
FOLLOWS_FILE = "follows.sqlite3"
SLACK_FILE = "slack/state.sqlite3"
SET_ASIDE = "roster.damaged"  # a damaged roster.json's new name: roster.damaged.json, roster.damaged-2.json, ...


class _RosterFile(BaseModel):
    version: int = 1
    scholars: list[Scholar] = Field(default_factory=list)


class DamagedRoster(Exception):
    """A ``roster.json`` that is not JSON or not a roster: ``path`` and what is wrong (``detail``)."""

    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path, self.detail = path, detail


def _parse_roster(path: Path) -> list[Scholar]:
    """The scholars of a ``roster.json`` ([] when there is none); ``DamagedRoster`` when it cannot
    be parsed, ``StorageError`` when it cannot be read at all."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StorageError(f"Cannot read the roster {path}: {exc.strerror or exc}.") from None
    try:
        return _RosterFile.model_validate(json.loads(data.decode("utf-8"))).scholars
    except (json.JSONDecodeError, ValidationError) as exc:
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else exc.errors()[0]["msg"]
        raise DamagedRoster(path, detail) from None
    except UnicodeDecodeError as exc:
        raise DamagedRoster(path, f"not UTF-8 text: {exc.reason}") from None


def read_roster(path: Path) -> list[Scholar]:
    """The scholars of a ``roster.json``, in file order ([] when there is no such file); a damaged
    one is a ``StorageError`` (the file is left untouched)."""
    try:
        return _parse_roster(path)
    except DamagedRoster as damaged:
        raise StorageError(
            f"The roster {path} is damaged ({damaged.detail}); it was left untouched.",
            hint="Fix the JSON by hand, or move the file away to start an empty roster.",
        ) from None


def roster_rows(data_dir: Path) -> list[dict[str, Any]]:
    """The rows of the ``scholars`` table for the data dir's ``roster.json``, in its order ([] when
    the data dir is no directory: a server's database needs none); ``DamagedRoster`` when the file
    cannot be parsed."""
    if not data_dir.is_dir():
        return []
    return [scholar.model_dump(mode="json") for scholar in _parse_roster(data_dir / ROSTER_FILE)]


def set_aside(damaged: DamagedRoster) -> Path:
    """Rename a damaged ``roster.json`` to the first free ``roster.damaged[-N].json`` beside it (never
    over another file); returns the new path. Its bytes are kept as they were."""
    for number in range(1, 1000):
        target = damaged.path.with_name(f"{SET_ASIDE}{'' if number == 1 else f'-{number}'}.json")
        try:
            os.link(damaged.path, target)  # fails on an existing target: nothing is overwritten
        except FileExistsError:
            continue
        except OSError:  # a file system without hard links
            if target.exists():
                continue
            os.replace(damaged.path, target)
            return target
        damaged.path.unlink()
        return target
    raise StorageError(f"Cannot set the damaged roster {damaged.path} aside: roster.damaged-2.json to -999.json exist.",
                       hint="Move the roster.damaged*.json files of the data dir away, then run the command again.")


def set_aside_files(data_dir: Path) -> list[Path]:
    """The damaged rosters an upgrade set aside in ``data_dir`` (``set_aside``), in the order they were."""
    if not data_dir.is_dir():
        return []
    return sorted(data_dir.glob(f"{SET_ASIDE}*.json"), key=lambda path: (len(path.name), path.name))


def set_aside_notice(damaged: DamagedRoster, kept: Path) -> str:
    """What an upgrade says of a damaged roster it set aside, and what to do next."""
    return (f"The roster {damaged.path} is damaged ({damaged.detail}): its scholars were not imported; everything "
            f"else was. The file is kept, renamed {kept}. Fix it by hand and add its scholars again with "
            "`paperbot scholars add NAME`, then move the file away (`paperbot doctor` names it until then).")


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
