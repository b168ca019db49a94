"""`paperbot ingest`: exit 2 with one clear line when nothing could be read, 0 on partial success,
and ``--format`` forcing a format. A run that reads nothing never loads the encoder, so only
the partial-success case pays for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import build_parser
from bot.commands.ingest import rewrite_fetch_argv
from retrieval.sources.files.detect import FORMATS
from tests.cli.conftest import Run, paperbot
from tests.support.model_cache import link_model_cache

BIBTEX = "@article{k1,\n  title = {A real title},\n  author = {Ada Lovelace},\n  year = 2020\n}\n"
NO_TITLES = "@article{x,\n  author = {A B}\n}\n@misc{y, year = 2020}\n"
FILES = {
    "refs.txt": BIBTEX,  # BibTeX under a .txt name
    "broken.bib": NO_TITLES,
    "empty.bib": "",
    "notes.md": "# Reading list\n\nTo do: export from Zotero.\n",
}


@pytest.fixture
def files(tmp_path: Path) -> Path:
    for name, content in FILES.items():
        (tmp_path / name).write_text(content, encoding="utf-8")
    return tmp_path


def error_line(run: Run) -> str:
    """The one error line; the rest of stderr may only be the progress bar."""
    assert "Traceback" not in run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("paperbot:")]
    assert len(errors) == 1, run.stderr
    return errors[0]


@pytest.mark.parametrize(
    ("name", "problem", "hint"),
    [
        ("notes.md", "notes.md: not in a format paperbot reads.", "or pass --format FMT (bibtex, jsonl,"),
        ("empty.bib", "empty.bib: the file is empty.", "Check the files; nothing was ingested."),
        ("broken.bib", "broken.bib: both entries were skipped: no title.", "or pass --format FMT"),
    ],
)
def test_a_file_that_gives_nothing_exits_2_with_one_line(files: Path, name: str, problem: str, hint: str) -> None:
    run = paperbot("ingest", name, data_dir=files / "data", cwd=files)
    assert run.code == 2
    line = error_line(run)
    assert line.startswith(f"paperbot: Nothing could be read from {problem}")
    assert hint in line
    assert "skipped 0" not in run.stdout and f"skipped {name}" in run.stdout  # the report is still printed
    assert not (files / "data" / "chroma").exists()  # nothing to index: the vector store is never created


def test_several_bad_files_json_is_one_document_with_the_error(files: Path) -> None:
    run = paperbot("ingest", "notes.md", "empty.bib", "broken.bib", "--json", data_dir=files / "data", cwd=files)
    assert run.code == 2
    report = run.json()  # stdout is exactly one JSON document
    message = (
        "Nothing could be read from the 3 given files (notes.md: not in a format paperbot reads; "
        "empty.bib: the file is empty; broken.bib: both entries were skipped: no title)."
    )
    assert report["ok"] is False
    assert report["error"]["message"] == message
    assert report["error"]["hint"].startswith("Check the files, or pass --format FMT")
    assert error_line(run) == f"paperbot: {message} {report['error']['hint']}"
    assert (report["added"], report["updated"], report["unchanged"]) == (0, 0, 0)  # the old fields stay
    assert [s["item"] for s in report["skipped"]] == [
        "notes.md", "empty.bib", "broken.bib: entry 'x' (line 1)", "broken.bib: entry 'y' (line 4)",
    ]
    assert [f["problem"] is not None for f in report["files"]] == [True, True, True]


@pytest.mark.slow  # the good file is embedded
def test_good_and_bad_files_exit_0_with_every_skip_and_format_forced(files: Path) -> None:
    data_dir = link_model_cache(files / "data")
    run = paperbot("ingest", "refs.txt", "broken.bib", "--format", "bibtex", data_dir=data_dir, cwd=files)
    assert run.code == 0, run.stderr
    assert "added 1," in run.stdout
    assert "skipped broken.bib: entry 'x' (line 1): no title" in run.stdout
    assert "skipped broken.bib: entry 'y' (line 4): no title" in run.stdout
    assert "paperbot:" not in run.stderr


def test_a_forced_wrong_format_is_a_clear_error(files: Path) -> None:
    run = paperbot("ingest", "refs.txt", "--format", "csl-json", data_dir=files / "data", cwd=files)
    assert run.code == 2
    line = error_line(run)
    assert line.startswith("paperbot: Nothing could be read from refs.txt: not valid CSL-JSON (")
    assert "Check that the file is csl-json, or pass another --format" in line


def test_an_unknown_format_is_refused_with_the_choices(files: Path) -> None:
    run = paperbot("ingest", "refs.txt", "--format", "endnote", data_dir=files / "data", cwd=files)
    assert run.code == 2
    assert "invalid choice: 'endnote'" in run.stderr
    assert all(f"'{fmt}'" in run.stderr for fmt in FORMATS)
    assert "Traceback" not in run.stderr


def test_ingest_arxiv_still_routes_to_fetch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no file named "arxiv" here
    argv = rewrite_fetch_argv(["ingest", "arxiv", "--author", "Ada Lovelace"])
    assert argv == ["fetch", "arxiv", "--author", "Ada Lovelace"]
    args = build_parser().parse_args(argv)
    assert (args.fetch_source, args.author) == ("arxiv", "Ada Lovelace")
    files = build_parser().parse_args(rewrite_fetch_argv(["ingest", "refs.bib", "--format", "ris"]))
    assert (files.paths, files.format) == ([Path("refs.bib")], "ris")
