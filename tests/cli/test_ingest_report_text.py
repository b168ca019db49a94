"""The text report of an ingest: a few examples of each kind of problem, then how many more and
where to see them all (``--json``); the options that print JSON say so in ``--help``."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bot.cli import main
from bot.commands.ingest import WARNINGS_SHOWN, print_report
from bot.context import CliContext
from retrieval.config import Settings
from retrieval.results import IngestReport, SkippedItem


def test_warnings_past_the_examples_are_counted_with_a_pointer_to_json(tmp_path: Path) -> None:
    report = IngestReport(added=["a"], warnings=[SkippedItem(f"entry 'e{n}'", "undefined macro") for n in range(7)])
    out = io.StringIO()
    ctx = CliContext(Settings(_env_file=None, data_dir=tmp_path), stdout=out)
    print_report(report, ctx, as_json=False, what="x.bib")
    text = out.getvalue()
    assert text.count("undefined macro") == WARNINGS_SHOWN
    assert f"... and {7 - WARNINGS_SHOWN:,} more warnings (use --json to see all)." in text


def test_no_more_line_when_every_warning_is_shown(tmp_path: Path) -> None:
    report = IngestReport(added=["a"], warnings=[SkippedItem("entry 'e1'", "undefined macro")])
    out = io.StringIO()
    print_report(report, CliContext(Settings(_env_file=None, data_dir=tmp_path), stdout=out), as_json=False, what="x")
    assert "more warnings" not in out.getvalue()


@pytest.mark.parametrize("command", ["stats", "doctor"])
def test_json_options_have_help_text(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    help_text = capsys.readouterr().out
    line = next(line for line in help_text.splitlines() if line.strip().startswith("--json"))
    assert "JSON object" in line
