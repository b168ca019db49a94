"""arXiv OAI-PMH oai_dc and the arXiv metadata snapshot, on real recorded slices."""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from pathlib import Path

import pytest

from retrieval.errors import ParseError
from retrieval.records.paper import Paper
from retrieval.sources.files.arxiv_snapshot import parse_arxiv_snapshot
from retrieval.sources.files.base import ParseOutcome
from retrieval.sources.files.oai import parse_oai_dc

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "files"
OAI_FILE = FIXTURES / "quant-ph_oai_dc_50.xml.gz"
SNAPSHOT_FILE = FIXTURES / "arxiv_snapshot_head60.jsonl"


def oai_text() -> str:
    return gzip.decompress(OAI_FILE.read_bytes()).decode("utf-8")


@lru_cache(maxsize=1)
def oai() -> ParseOutcome:
    return parse_oai_dc(oai_text())


@lru_cache(maxsize=1)
def snapshot() -> ParseOutcome:
    return parse_arxiv_snapshot(SNAPSHOT_FILE.read_text(encoding="utf-8"))


def find(outcome: ParseOutcome, arxiv_id: str) -> Paper:
    return next(p for p in outcome.papers if p.arxiv_id == arxiv_id)


# --- OAI-PMH oai_dc -----------------------------------------------------------------------------


def test_oai_reads_all_fifty_records() -> None:
    outcome = oai()
    assert (outcome.format, len(outcome.papers), outcome.skipped) == ("oai-dc", 50, [])


def test_oai_record_with_doi_and_journal_reference() -> None:
    paper = find(oai(), "0704.0046")
    assert paper.title == "A limit relation for entropy and channel capacity per unit cost"
    assert paper.author_names == ["I. Csiszar", "F. Hiai", "D. Petz"]  # from "Csiszar, I."
    assert paper.doi == "10.1063/1.2779138"
    assert paper.venue == "J. Math. Phys. 48(2007), 092102."
    assert paper.published == "2007-04-01"
    assert paper.categories == ["Quantum Physics", "Computer Science - Information Theory"]
    assert paper.abstract is not None
    assert paper.abstract.startswith("In a quantum mechanical model, Diosi, Feldmann and Kosloff")
    assert "Comment:" not in paper.abstract  # the second dc:description is not the abstract
    assert paper.provenance[0].source_id == "oai:arXiv.org:0704.0046"
    assert paper.id == "doi:10.1063/1.2779138"


def test_oai_latex_in_abstract_is_decoded() -> None:
    paper = find(oai(), "0704.0228")
    assert paper.abstract is not None
    assert "acceleration tensor = const. × total energy momentum tensor" in paper.abstract
    assert find(oai(), "0704.0593").author_names[-1] == "Gediminas Juzeliūnas"


def test_oai_refuses_entity_declarations() -> None:
    bomb = (
        '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
        '<!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>\n'
        "<ListRecords><record>&lol2;</record></ListRecords>"
    )
    with pytest.raises(ParseError, match="declares a DOCTYPE or ENTITY") as caught:
        parse_oai_dc(bomb, name="bomb.xml")
    assert "bomb.xml" in caught.value.user_message


def test_oai_malformed_record_costs_only_itself() -> None:
    text = oai_text()
    first = text.index("<dc:title>")
    broken = (
        text[:first]
        + "<dc:title>Unclosed <b>tag</dc:title>"
        + text[text.index("</dc:title>", first) + 11 :]
    )
    outcome = parse_oai_dc(broken)
    assert len(outcome.papers) == 49
    assert outcome.skipped[0].item == "record 1"
    assert outcome.skipped[0].reason.startswith("malformed XML: mismatched tag")


def test_oai_deleted_record_is_skipped() -> None:
    text = (
        '<ListRecords><record><header status="deleted"><identifier>oai:arXiv.org:0704.0001'
        "</identifier></header></record></ListRecords>"
    )
    outcome = parse_oai_dc(text)
    assert outcome.papers == []
    assert outcome.skipped[0].item == "record 1 (oai:arXiv.org:0704.0001)"
    assert outcome.skipped[0].reason == "the record is marked deleted"


def test_oai_not_xml_at_all_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="not well-formed XML"):
        parse_oai_dc("this is not xml", name="notes.xml")


# --- metadata snapshot --------------------------------------------------------------------------


def test_snapshot_reads_every_line() -> None:
    outcome = snapshot()
    assert (outcome.format, len(outcome.papers), outcome.skipped) == ("arxiv-snapshot", 60, [])


def test_snapshot_record_fields() -> None:
    paper = find(snapshot(), "0704.0001")
    assert paper.title == (
        "Calculation of prompt diphoton production cross sections at Tevatron and LHC energies"
    )
    assert paper.author_names == ["C. Balázs", "E. L. Berger", "P. M. Nadolsky", "C. -P. Yuan"]
    assert paper.published == "2007-04-02"  # versions[0].created
    assert paper.arxiv_version == "v2"
    assert paper.venue == "Phys.Rev.D76:013009,2007"
    assert paper.doi == "10.1103/physrevd.76.013009"
    assert paper.categories == ["hep-ph"]
    assert paper.url == "https://arxiv.org/abs/0704.0001"
    assert paper.provenance[0].source == "arxiv-snapshot"


def test_snapshot_latex_is_decoded() -> None:
    assert find(snapshot(), "0704.0005").title == "From dyadic Λ_α to Λ_α"
    assert find(snapshot(), "0704.0054").title == "The Hardy-Lorentz Spaces H^p,q(Rⁿ)"
    assert find(snapshot(), "0704.0049").author_names == ["Mikkel Øbro"]
    assert "(k,ℓ)-pebble game with colors" in (find(snapshot(), "0704.0002").abstract or "")


def test_snapshot_suffix_from_authors_parsed() -> None:
    assert "Neal J. Evans II" in find(snapshot(), "0704.0009").author_names


def test_snapshot_bad_lines_between_good_ones() -> None:
    lines = SNAPSHOT_FILE.read_text(encoding="utf-8").splitlines()[:2]
    text = "\n".join(
        [lines[0], "{not json", "", json.dumps({"id": "nonsense", "title": "x"}), lines[1]]
    )
    outcome = parse_arxiv_snapshot(text)
    assert [p.arxiv_id for p in outcome.papers] == ["0704.0001", "0704.0002"]
    assert [(s.item, s.reason) for s in outcome.skipped] == [
        ("line 2", "invalid JSON: Expecting property name enclosed in double quotes at column 2"),
        ("line 4 (nonsense)", "id 'nonsense' is not an arXiv identifier"),
    ]
