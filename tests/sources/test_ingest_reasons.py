"""Every dropped item has a reason: truncated OAI records, empty files, files that read as nothing."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from retrieval.assistant import Assistant
from retrieval.config import Settings
from retrieval.errors import InputError
from retrieval.ingest.pipeline import read_files
from retrieval.sources.files.arxiv_snapshot import parse_arxiv_snapshot
from retrieval.sources.files.oai import parse_oai_dc

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "files"
CUT_OFF = "cut off at the end of the file (truncated download?)"
BIBTEX = "@article{k1,\n  title = {A real title},\n  author = {Ada Lovelace},\n  year = 2020\n}\n"


@pytest.fixture(scope="module")
def oai_text() -> str:
    with gzip.open(FIXTURES / "quant-ph_oai_dc_50.xml.gz", "rt", encoding="utf-8") as handle:
        return handle.read()


# --- OAI-PMH: truncated and unclosed records ------------------------------------------------------


def test_oai_record_cut_off_at_the_end_is_reported_with_its_identifier(oai_text: str) -> None:
    third = oai_text.index("<record>", oai_text.index("oai:arXiv.org:0704.0046"))
    cut = oai_text[: oai_text.index("<dc:title>", third) + 20]  # mid-title of record 3
    outcome = parse_oai_dc(cut, name="cut.xml")
    assert len(outcome.papers) == 2
    assert [(s.item, s.reason) for s in outcome.skipped] == [("record 3 (oai:arXiv.org:0704.0051)", CUT_OFF)]


def test_oai_cut_inside_the_first_record_is_a_skip_not_a_file_error(oai_text: str) -> None:
    inside_header = parse_oai_dc(oai_text[: oai_text.index("<identifier>") + 8])
    assert (inside_header.papers, [(s.item, s.reason) for s in inside_header.skipped]) == ([], [("record 1", CUT_OFF)])
    inside_metadata = parse_oai_dc(oai_text[: oai_text.index("<dc:title>") + 5])
    assert [s.item for s in inside_metadata.skipped] == ["record 1 (oai:arXiv.org:0704.0042)"]


def test_oai_record_without_end_tag_before_the_next_costs_only_itself(oai_text: str) -> None:
    end = oai_text.index("</record>")
    outcome = parse_oai_dc(oai_text[:end] + oai_text[end + len("</record>") :])
    assert len(outcome.papers) == 49
    assert [(s.item, s.reason) for s in outcome.skipped] == [
        ("record 1 (oai:arXiv.org:0704.0042)", "malformed XML: no </record> before the next <record>")
    ]


def test_oai_error_response_says_what_the_server_answered() -> None:
    text = (
        '<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><error code="noRecordsMatch">'
        "The combination of the values results in an empty list.</error></OAI-PMH>"
    )
    outcome = parse_oai_dc(text)
    assert [(s.item, s.reason) for s in outcome.skipped] == [
        ("the OAI-PMH response",
         "no records; the server answered noRecordsMatch: The combination of the values results in an empty list.")
    ]


def test_snapshot_as_one_json_array_is_read_item_by_item() -> None:
    records = [{"id": "0704.0001", "title": "One"}, {"id": "0704.0002", "title": ""}, ["not", "a", "record"]]
    outcome = parse_arxiv_snapshot(json.dumps(records))
    assert [p.title for p in outcome.papers] == ["One"]
    assert [(s.item, s.reason) for s in outcome.skipped] == [
        ("item 2 (0704.0002)", "no title"),
        ("item 3", "not a JSON object (found list)"),
    ]


# --- files that hold nothing ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("empty.bib", "", "the file is empty"),
        ("blank.txt", "  \n\n\t\n", "the file is empty"),  # undetectable, yet the reason is "empty"
        ("blank.xml", "\ufeff\n", "the file is empty"),  # the OAI parser would call it malformed
        ("notes.bib", "% my references, to do\n\n", "no BibTeX entries, only comments"),
        ("macros.bib", "@string{jgr = {J. Geophys. Res.}}\n@comment{nothing}\n",
         "no BibTeX entries, only @comment, @string"),
        ("none.json", "[ ]", "an empty JSON array"),
        ("none.jsonl", "[]\n", "an empty JSON array"),
        ("ok.xml", '<ListRecords xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/"></ListRecords>',
         "no <record> elements"),
    ],
)
def test_a_file_with_nothing_in_it_is_one_skipped_item(tmp_path: Path, name: str, content: str, problem: str) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    papers, report = read_files([path])
    assert papers == []
    assert [(s.item, s.reason) for s in report.skipped] == [(str(path), f"no records found ({problem})")]
    assert [(f.records, f.skipped, f.problem) for f in report.files] == [(0, 1, problem)]
    assert report.nothing_read


def test_file_results_say_what_each_file_gave(tmp_path: Path) -> None:
    (tmp_path / "refs.txt").write_text(BIBTEX, encoding="utf-8")  # BibTeX under .txt: detected
    (tmp_path / "broken.bib").write_text("@article{x, author = {A B}}\n@misc{y, year = 2020}\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("# Reading list\n\nnothing here\n", encoding="utf-8")
    paths = [tmp_path / "refs.txt", tmp_path / "broken.bib", tmp_path / "notes.md"]
    papers, report = read_files(paths)
    assert [p.title for p in papers] == ["A real title"]
    assert not report.nothing_read  # partial success
    assert [(f.format, f.records, f.skipped, f.problem) for f in report.files] == [
        ("bibtex", 1, 0, None),
        ("bibtex", 0, 2, "both entries were skipped: no title"),
        (None, 0, 1, "not in a format paperbot reads"),
    ]
    assert sum(f.skipped for f in report.files) == len(report.skipped)
    files = report.as_dict()["files"]
    assert isinstance(files, list) and files[0] == {
        "path": str(paths[0]), "format": "bibtex", "records": 1, "skipped": 0, "problem": None,
    }


def test_forced_format_is_used_and_an_unknown_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "refs.txt"
    path.write_text(BIBTEX, encoding="utf-8")
    assert [p.title for p in read_files([path], fmt="bibtex")[0]] == ["A real title"]
    _, as_ris = read_files([path], fmt="ris")
    assert as_ris.files[0].problem == "no RIS records: no line starts with 'TY  - '"
    _, as_csl = read_files([path], fmt="csl-json")
    assert as_csl.files[0].problem is not None
    assert as_csl.files[0].problem.startswith("not valid CSL-JSON (Expecting value")
    with pytest.raises(InputError, match="Unknown format 'xml'"):
        read_files([path], fmt="xml")


def test_nothing_read_never_opens_the_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from retrieval.index.paper_index import PaperIndex

    data_dir = tmp_path / "data"
    settings = Settings(_env_file=None, data_dir=data_dir, openai_api_key=None, openai_base_url=None)
    (tmp_path / "empty.bib").write_text("", encoding="utf-8")
    opened: list[Settings] = []
    monkeypatch.setattr(PaperIndex, "open", classmethod(lambda cls, settings, *args, **kwargs: opened.append(settings)))
    assistant = Assistant(settings, chat_model=None)
    report = assistant.library.ingest_files([tmp_path / "empty.bib"])
    assert report.nothing_read
    assert opened == []
    assert not settings.chroma_dir.exists() and not settings.records_path.exists()
