"""Small things a newcomer trips on (issue #27 item 7): each says what happened once, in the
words of the command that was run."""

from __future__ import annotations

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
