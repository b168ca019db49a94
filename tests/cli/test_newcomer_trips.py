"""Small things a newcomer trips on (issue #27 item 7): each says what happened once, in the
words of the command that was run."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import paperbot_here


def test_collaborators_on_an_empty_index_says_so_once_with_what_to_do(tmp_path: Path) -> None:
    run = paperbot_here("collaborators", "optical interconnects", data_dir=tmp_path / "empty")
    assert run.code == 0
    assert run.stdout.strip() == "No paper is indexed yet: add some with `paperbot ingest` (or try `paperbot demo`)."
    assert "No paper is indexed" not in run.stderr


def test_an_unknown_option_is_reported_with_the_commands_usage(tmp_path: Path) -> None:
    run = paperbot_here("ask", "--bogus", "a question", data_dir=tmp_path / "data")
    assert run.code == 2
    assert "usage: paperbot ask" in run.stderr
    assert "paperbot ask: error: unrecognized arguments: --bogus" in run.stderr


def test_reading_a_data_dir_that_does_not_exist_says_so_and_creates_nothing(tmp_path: Path) -> None:
    """A mistyped PAPERBOT_DATA_DIR: each reading command answers as over an empty index (its
    output and exit status unchanged), names the missing folder once on stderr, and leaves no
    folder behind: before, it created an empty index there and only said "No paper is indexed yet"."""
    missing = tmp_path / "typo" / "data"
    asked = paperbot_here("ask", "which papers use graphene?", "--json", data_dir=missing, cwd=tmp_path)
    assert asked.code == 0
    assert json.loads(asked.stdout)["citations"] == []
    assert asked.stderr.count(f"The data dir {missing} does not exist") == 1
    assert "Check PAPERBOT_DATA_DIR" in asked.stderr
    stats = paperbot_here("stats", "--json", data_dir=missing, cwd=tmp_path)
    assert stats.code == 0 and json.loads(stats.stdout)["papers"] == 0
    summary = paperbot_here("summarize", "Ada Lovelace", data_dir=missing, cwd=tmp_path)
    assert summary.code == 2 and f"The data dir {missing} does not exist" in summary.stderr
    assert paperbot_here("search", "graphene", data_dir=missing, cwd=tmp_path).code == 0
    assert paperbot_here("export", data_dir=missing, cwd=tmp_path).stdout == ""
    assert not (tmp_path / "typo").exists()


def test_an_existing_empty_data_dir_is_read_as_before(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    run = paperbot_here("search", "graphene", data_dir=data_dir)
    assert run.code == 0 and "does not exist" not in run.stderr
    assert "No paper is indexed yet" in run.stdout + run.stderr
