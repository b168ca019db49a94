"""Hostile files, round two (issue #30 items 4-6): one bad byte or item never costs the good
ones beside it, a named pipe never hangs an ingest, and a file's name cannot drive the terminal."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from retrieval.errors import ParseError
from retrieval.ingest.pipeline import read_files
from retrieval.records.paper import Paper
from retrieval.results import IngestReport
from retrieval.sources.files.base import NESTED_TOO_DEEPLY
from retrieval.sources.files.detect import parse_file
from tests.cli.conftest import paperbot_here

GOOD_ENTRIES = (b"@article{one, title={First paper}, author={Doe, Jane}, year={2020}}\n"
                b"@article{two, title={Second paper}, author={Roe, Rick}, year={2021}}\n")
CSL_ITEM = {"id": "good", "type": "article-journal", "title": "A good paper",
            "author": [{"family": "Doe", "given": "Jane"}], "issued": {"date-parts": [[2021]]}}
DEEP = "[" * 50_000 + "]" * 50_000


def test_a_stray_nul_byte_does_not_make_a_bibtex_file_binary(tmp_path: Path) -> None:
    path = tmp_path / "refs.bib"
    path.write_bytes(GOOD_ENTRIES.replace(b"Second", b"Sec\x00ond") + b"\x00\n")
    outcome = parse_file(path)
    assert [paper.title for paper in outcome.papers] == ["First paper", "Second paper"]


@pytest.mark.parametrize(("data", "what"), [
    (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj", "a PDF"),
    (b"PK\x03\x04\x14\x00\x06\x00", "a ZIP archive"),
    (bytes(range(256)) * 16, "binary data"),
])
def test_binary_files_are_named_for_what_they_are(tmp_path: Path, data: bytes, what: str) -> None:
    path = tmp_path / "refs.bib"
    path.write_bytes(data)
    with pytest.raises(ParseError, match=f"it looks like {what}"):
        parse_file(path)


def test_one_item_nested_too_deeply_is_skipped_and_its_neighbours_read(tmp_path: Path) -> None:
    csl = tmp_path / "items.json"
    csl.write_text("[" + json.dumps(CSL_ITEM) + ', {"id": "deep", "title": "x", "note": ' + DEEP + "}, "
                   + json.dumps({**CSL_ITEM, "id": "also", "title": 'Brackets "]}" in a string'}) + "]",
                   encoding="utf-8")
    outcome = parse_file(csl, "csl-json")
    assert [paper.title for paper in outcome.papers] == ["A good paper", 'Brackets "]}" in a string']
    assert [(item.item, item.reason) for item in outcome.skipped] == [("item 2", NESTED_TOO_DEEPLY)]

    papers = tmp_path / "papers.jsonl"
    papers.write_text("[" + DEEP + ', {"title": "Kept", "authors": [{"name": "Ada Lovelace"}]}]', encoding="utf-8")
    outcome = parse_file(papers, "jsonl")
    assert [paper.title for paper in outcome.papers] == ["Kept"]
    assert [item.reason for item in outcome.skipped] == [NESTED_TOO_DEEPLY]


def test_an_unclosed_deep_item_is_still_a_broken_document(tmp_path: Path) -> None:
    path = tmp_path / "items.json"
    path.write_text("[" + json.dumps(CSL_ITEM) + ", " + "[" * 50_000, encoding="utf-8")
    with pytest.raises(ParseError, match="not valid CSL-JSON"):
        parse_file(path, "csl-json")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_a_named_pipe_is_refused_at_once_and_the_file_beside_it_read(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe.bib"
    os.mkfifo(pipe)  # nobody ever writes to it: opening it to read would wait forever
    good = tmp_path / "good.bib"
    good.write_bytes(GOOD_ENTRIES)
    result: list[tuple[list[Paper], IngestReport]] = []
    reader = threading.Thread(target=lambda: result.append(read_files([pipe, good])), daemon=True)
    reader.start()
    reader.join(timeout=60)
    assert result, "reading the files hung on the named pipe"
    papers, report = result[0]
    assert [paper.title for paper in papers] == ["First paper", "Second paper"]
    [skipped] = report.skipped
    assert skipped.item == str(pipe) and "is a named pipe, not a file" in skipped.reason


def test_file_names_cannot_drive_the_terminal(tmp_path: Path) -> None:
    hostile = tmp_path / "\x1b[2J\x1b]0;owned\x07evil\u202etxt.bib"
    hostile.write_text("", encoding="utf-8")
    run = paperbot_here("ingest", str(hostile), data_dir=tmp_path / "data")
    assert run.code == 2
    shown = run.stdout + run.stderr
    assert "\x1b" not in shown and "\u202e" not in shown and "\x07" not in shown
    assert "\\x1b[2J\\x1b]0;owned\\x07evil\\u202etxt.bib" in shown
