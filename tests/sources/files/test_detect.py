"""Format detection (content first, extension breaks ties) and reading files safely."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from retrieval.errors import ParseError
from retrieval.sources.files import detect as files
from retrieval.sources.files.detect import FORMATS, detect_format, parse_file, parse_text

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "files"


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("petsc.bib", "bibtex"),
        ("csl_list.json", "csl-json"),
        ("csl_item.json", "csl-json"),
        ("ris_full.ris", "ris"),
        ("ris_bom.ris", "ris"),
        ("quant-ph_oai_dc_50.xml.gz", "oai-dc"),
        ("arxiv_snapshot_head60.jsonl", "arxiv-snapshot"),
    ],
)
def test_real_fixtures_are_detected_from_content(name: str, fmt: str) -> None:
    data = (FIXTURES / name).read_bytes()
    text = (gzip.decompress(data) if name.endswith(".gz") else data).decode("utf-8-sig")
    assert detect_format(text) == fmt  # no file name: content alone decides
    assert detect_format(text, "export.txt") == fmt
    assert fmt in FORMATS


def test_content_beats_a_misleading_extension() -> None:
    assert detect_format("@article{a, title={T}}", "refs.ris") == "bibtex"
    assert detect_format("TY  - JOUR\nTI  - T\nER  - \n", "refs.bib") == "ris"


def test_paper_jsonl_and_json_array_of_papers() -> None:
    lines = "\n".join(json.dumps({"title": t, "authors": [], "published": "2020"}) for t in "AB")
    assert detect_format(lines) == "jsonl"
    assert (
        detect_format(json.dumps([{"title": "A", "venue": "V", "arxiv_id": "2101.00001"}]))
        == "jsonl"
    )


def test_extension_breaks_a_tie() -> None:
    ambiguous = json.dumps({"title": "Only a title"})
    assert detect_format(ambiguous, "one.jsonl") == "jsonl"
    assert detect_format(ambiguous, "one.json") == "csl-json"
    assert detect_format(ambiguous, "one.json.gz") == "csl-json"
    assert detect_format("", "empty.bib") == "bibtex"
    assert detect_format("% only comments\n", "notes.bib") == "bibtex"


@pytest.mark.parametrize(
    "text",
    ["plain prose without any structure", "<html><body>hi</body></html>", json.dumps({"a": 1})],
)
def test_unknown_content_raises_naming_the_file(text: str) -> None:
    with pytest.raises(ParseError, match=r"mystery\.txt is not in a format paperbot reads"):
        detect_format(text, "mystery.txt")


def test_parse_text_with_explicit_and_unknown_format() -> None:
    assert parse_text("TY  - JOUR\nTI  - T\nER  - \n", "ris").papers[0].title == "T"
    assert parse_text("@misc{k, title={T}}").format == "bibtex"
    with pytest.raises(ParseError, match="Unknown format 'endnote-xml'"):
        parse_text("x", "endnote-xml")


# --- parse_file -------------------------------------------------------------------------------


def test_parse_file_reads_gzip_and_plain(tmp_path: Path) -> None:
    assert len(parse_file(FIXTURES / "quant-ph_oai_dc_50.xml.gz").papers) == 50
    plain = tmp_path / "refs.bib"
    plain.write_text("@article{a, title={Caf{\\'e}}}\n", encoding="utf-8")
    zipped = tmp_path / "refs.bib.gz"
    zipped.write_bytes(gzip.compress(plain.read_bytes()))
    assert parse_file(plain).papers[0].title == parse_file(zipped).papers[0].title == "Café"


def test_parse_file_decodes_legacy_encodings(tmp_path: Path) -> None:
    latin = tmp_path / "old.bib"
    latin.write_bytes("@book{b, title={Gödel, Escher, Bach}}".encode("latin-1"))
    assert parse_file(latin).papers[0].title == "Gödel, Escher, Bach"
    utf16 = tmp_path / "win.ris"
    utf16.write_bytes("TY  - BOOK\r\nTI  - Ünïcode\r\nER  - \r\n".encode("utf-16"))
    assert parse_file(utf16).papers[0].title == "Ünïcode"


def test_parse_file_with_explicit_format(tmp_path: Path) -> None:
    path = tmp_path / "refs.txt"
    path.write_text(json.dumps({"title": "T"}), encoding="utf-8")
    assert parse_file(path, "jsonl").format == "jsonl"


def test_binary_missing_and_damaged_files_raise(tmp_path: Path) -> None:
    binary = tmp_path / "image.bib"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(ParseError, match=r"image\.bib is not a text file"):
        parse_file(binary)
    with pytest.raises(ParseError, match=r"missing\.bib cannot be read"):
        parse_file(tmp_path / "missing.bib")
    damaged = tmp_path / "refs.bib.gz"
    damaged.write_bytes(gzip.compress(b"@misc{a, title={T}}")[:-12])
    with pytest.raises(ParseError, match=r"refs\.bib\.gz is a damaged gzip file"):
        parse_file(damaged)
    with pytest.raises(ParseError, match="is a directory, not a file"):
        parse_file(tmp_path)


def test_file_over_the_size_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 1024 * 1024)
    big = tmp_path / "big.bib"
    big.write_bytes(b"%" * (1024 * 1024 + 1))
    with pytest.raises(ParseError, match=r"big.bib is larger than the 1 MB limit"):
        parse_file(big)
    bomb = tmp_path / "bomb.bib.gz"  # small on disk, too large once decompressed
    bomb.write_bytes(gzip.compress(b"%" * (2 * 1024 * 1024)))
    with pytest.raises(ParseError, match=r"bomb.bib.gz is larger than the 1 MB limit"):
        parse_file(bomb)


def test_default_limit_is_200_mb() -> None:
    assert files.MAX_FILE_BYTES == 200 * 1024 * 1024


def test_every_listed_format_has_its_parser() -> None:
    """The light list the doors show (``FILE_FORMATS``) names exactly the formats detection parses."""
    from retrieval import FILE_FORMATS
    from retrieval.errors import ParseError

    assert FILE_FORMATS == FORMATS
    for fmt in FILE_FORMATS:
        try:
            parse_text("", fmt)
        except ParseError as exc:
            assert "Unknown format" not in str(exc), fmt


@pytest.mark.parametrize("name", ["petsc.bib", "csl_list.json", "ris_full.ris", "arxiv_snapshot_head60.jsonl"])
def test_every_entry_with_a_key_of_its_own_names_the_file_it_was_read_from(name: str, tmp_path: Path) -> None:
    """``Provenance.file`` is the absolute path, however the file was named (here: relative)."""
    copy = tmp_path / name
    copy.write_bytes((FIXTURES / name).read_bytes())
    outcome = parse_file(Path(os.path.relpath(copy)))
    own = [paper.provenance[-1] for paper in outcome.papers]
    assert own and all(entry.file == str(copy.resolve()) for entry in own if entry.source_id)
    assert all(entry.file is None for entry in own if not entry.source_id)


def test_a_key_several_items_of_a_file_share_names_no_file(tmp_path: Path) -> None:
    """CSL-JSON ids repeated (BibTeX keeps a repeated key for the first entry only): no entry is
    then tied to the file, so that none is later taken for another's earlier version."""
    items = [{"id": "same", "type": "article-journal", "title": title, "author": [{"family": "Doe", "given": "J."}],
              "issued": {"date-parts": [[2021]]}} for title in ("Sparse Tensor Storage Formats", "Learned Index Structures")]
    items.append({**items[0], "id": "other", "title": "Graph Partitioning at Scale"})
    path = tmp_path / "list.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    files = {paper.title: paper.provenance[-1].file for paper in parse_file(path).papers}
    assert files == {"Sparse Tensor Storage Formats": None, "Learned Index Structures": None,
                     "Graph Partitioning at Scale": str(path.resolve())}


def test_a_json_lines_record_keeps_the_provenance_it_carries_and_names_its_own_file(tmp_path: Path) -> None:
    """An exported record read back: the entries it carries (another file's included) stay as they
    were; only the entry this read adds names this file."""
    carried = {"source": "bibtex", "source_id": "doe2021", "file": "/elsewhere/mine.bib"}
    record = {"title": "Sparse Tensor Storage Formats", "authors": [{"name": "Jane Doe"}], "year": 2021,
              "provenance": [carried]}
    path = tmp_path / "export.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    [paper] = parse_file(path).papers
    assert [(entry.source, entry.file) for entry in paper.provenance] == [
        ("bibtex", "/elsewhere/mine.bib"), ("jsonl", str(path.resolve()))]
