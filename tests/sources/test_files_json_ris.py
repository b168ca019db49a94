"""JSON Lines of papers, CSL-JSON and RIS: the parsers on small exports written for these tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval.errors import ParseError
from retrieval.sources.files.csljson import parse_csl_json
from retrieval.sources.files.jsonl import parse_jsonl
from retrieval.sources.files.ris import parse_ris

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "files"


# --- JSON Lines ---------------------------------------------------------------------------------


def test_jsonl_good_bad_and_blank_lines() -> None:
    text = "\n".join(
        [
            json.dumps({"title": "First", "year": 2020, "authors": [{"name": "Ada Lovelace"}]}),
            "",
            "{broken json",
            json.dumps({"title": "   "}),
            json.dumps(["not", "an", "object"]),
            json.dumps({"title": "Bad date", "published": "someday"}),
            json.dumps({"title": "Second", "doi": "https://doi.org/10.1000/ABC"}),
        ]
    )
    outcome = parse_jsonl(text)
    assert [p.title for p in outcome.papers] == ["First", "Second"]
    assert outcome.papers[0].published == "2020"  # "year" accepted for published
    assert outcome.papers[1].doi == "10.1000/abc"
    assert [(s.item, s.reason) for s in outcome.skipped] == [
        ("line 3", "invalid JSON: Expecting property name enclosed in double quotes at column 2"),
        ("line 4", "title: title is empty"),
        ("line 5", "not a JSON object (found list)"),
        ("line 6", "published: publication date 'someday' is not YYYY[-MM[-DD]]"),
    ]


def test_oversized_fields_skip_the_item() -> None:
    huge = "x" * 100_001
    jsonl = parse_jsonl(json.dumps({"title": "T", "abstract": huge}))
    ris = parse_ris(f"TY  - JOUR\nTI  - T\nAB  - {huge}\nER  - \n")
    csl = parse_csl_json(json.dumps([{"title": huge}]))
    for outcome, field in ((jsonl, "abstract"), (ris, "AB"), (csl, "title")):
        assert outcome.papers == []
        assert outcome.skipped[0].reason == f"field {field!r} exceeds 100000 characters"


def test_jsonl_keeps_existing_provenance_and_adds_its_own() -> None:
    record = {
        "title": "Exported",
        "arxiv_id": "2101.00001",
        "provenance": [{"source": "openalex", "source_id": "W1", "fields": ["title"]}],
    }
    paper = parse_jsonl(json.dumps(record)).papers[0]
    assert [p.source for p in paper.provenance] == ["openalex", "jsonl"]
    assert paper.provenance[-1].source_id == "arxiv:2101.00001"
    assert paper.provenance[-1].fields == ["title", "arxiv_id"]


def test_jsonl_accepts_a_json_array_of_papers() -> None:
    outcome = parse_jsonl(json.dumps([{"title": "A"}, {"title": ""}, {"title": "B"}], indent=2))
    assert [p.title for p in outcome.papers] == ["A", "B"]
    assert outcome.skipped[0].item == "item 2"


# --- CSL-JSON -----------------------------------------------------------------------------------


def test_csl_list_export() -> None:
    outcome = parse_csl_json((FIXTURES / "csl_list.json").read_text(encoding="utf-8"))
    assert (outcome.format, len(outcome.papers), outcome.skipped) == ("csl-json", 4, [])
    first = outcome.papers[0]
    assert first.title == "Calculation of prompt diphoton production cross sections at Tevatron and LHC energies"
    assert first.author_names[:2] == ["C. Balázs", "E. L. Berger"]  # LaTeX escape in a name decoded
    assert (first.published, first.venue, first.doi) == ("2007-07-01", "Physical Review D", "10.1103/physrevd.76.013009")
    assert first.provenance[0].source_id == "balazsCalculationPromptDiphoton2007"
    by_id = {p.provenance[0].source_id: p for p in outcome.papers}
    preprint = by_id["shangLargescaleEmpiricalStudy2024"]
    assert preprint.arxiv_id == "2412.16620"  # from the arxiv.org URL
    assert preprint.abstract is not None
    assert "each other’s test generation" in preprint.abstract
    assert by_id["kertushaSurveyWebTesting2025"].published == "2025-03"
    manual = by_id["balayPETScUsersManual2024"]
    assert manual.publisher == "Argonne National Laboratory"
    assert manual.author_names == ["Satish Balay", "The PETSc Team"]  # a literal (organisation) name


def test_csl_single_item_with_publisher_object_and_categories() -> None:
    outcome = parse_csl_json((FIXTURES / "csl_item.json").read_text(encoding="utf-8"))
    paper = outcome.papers[0]
    assert (paper.title, paper.publisher, paper.published) == (
        "Sparsity-certifying Graph Decompositions",
        "arXiv",
        "2007-03-31",
    )
    assert paper.categories == ["math.CO", "cs.CG"]
    assert paper.author_names == ["Ileana Streinu", "Louis Theran"]


def test_csl_items_literal_names_jats_abstract_and_skips() -> None:
    items = [
        {
            "id": "x1",
            "title": ["A <i>study</i>"],
            "author": [
                {"literal": "World Health Organization"},
                {"family": "Beethoven", "given": "Ludwig", "non-dropping-particle": "van"},
            ],
            "issued": {"raw": "2019-07"},
            "abstract": "<jats:p>Background text.</jats:p>",
        },
        {"id": "x2", "author": [{"family": "Nobody"}]},
        "not an item",
    ]
    outcome = parse_csl_json(json.dumps(items))
    paper = outcome.papers[0]
    assert paper.title == "A study"
    assert paper.author_names == ["World Health Organization", "Ludwig van Beethoven"]
    assert (paper.published, paper.abstract) == ("2019-07", "Background text.")
    assert [(s.item, s.reason) for s in outcome.skipped] == [
        ("item 2 (x2)", "no title"),
        ("item 3", "not a JSON object (str)"),
    ]


def test_csl_document_that_is_not_json_raises_naming_the_file() -> None:
    with pytest.raises(ParseError, match=r"refs\.json is not valid CSL-JSON"):
        parse_csl_json("[{oops", name="refs.json")


# --- RIS ----------------------------------------------------------------------------------------


def test_ris_two_records_with_prose_between_them() -> None:
    outcome = parse_ris((FIXTURES / "ris_full.ris").read_text(encoding="utf-8"))
    assert (outcome.format, len(outcome.papers), outcome.skipped) == ("ris", 2, [])
    paper = outcome.papers[0]
    assert paper.title == "Convergence of the discrete dipole approximation"
    assert paper.author_names == ["Maxim A. Yurkin", "Valeri P. Maltsev"]  # A2 (editor) is not an author
    assert (paper.published, paper.venue, paper.publisher) == (
        "2007", "Journal of the Optical Society of America A", "Optica Publishing Group",
    )
    assert paper.categories == ["light scattering", "discrete dipole approximation"]
    assert paper.abstract is not None
    assert paper.abstract.startswith("BACKGROUND: We study")
    assert paper.url == "http://example.org/dda"
    assert paper.provenance[0].source_id == "2001"
    assert outcome.papers[1].author_names == ["Simon J. A. Malham", "Anke Wiese"]


def test_ris_continuation_lines() -> None:
    paper = parse_ris((FIXTURES / "ris_endnote.ris").read_text(encoding="utf-8")).papers[0]
    assert paper.title == "Lifetime of doubly charmed baryons"
    assert paper.categories == ["charm", "baryons", "lifetimes", "QCD"]  # untagged lines continue KW
    assert paper.author_names[0] == "V. V. Kiselev"
    assert (paper.doi, paper.venue, paper.type) == ("10.1234/charm.baryons.2007", "Physics Letters B", "article")
    assert paper.url == "https://example.org/charm"


def test_ris_unicode_and_bom() -> None:
    paper = parse_ris((FIXTURES / "ris_utf_chars.ris").read_text(encoding="utf-8")).papers[0]
    assert paper.title == "Исследование устойчивости численных методов"  # from ST
    assert paper.author_names == ["I. I. Ivanov"]
    bom = parse_ris((FIXTURES / "ris_bom.ris").read_text(encoding="utf-8"))
    assert bom.papers == []
    assert bom.skipped[0].reason == "no title (no TI, T1, CT or ST line)"


def test_ris_broken_record_between_two_good_ones() -> None:
    text = (
        "TY  - JOUR\nTI  - Good one\nPY  - 2001/02/03/\nER  - \n"
        "TY  - JOUR\nAU  - Nobody, A.\nER  - \n"
        "TY  - CONF\nT1  - Good two\nDA  - 2005/07\nAU  - Doe, Jane, Jr.\n"
    )
    outcome = parse_ris(text)
    assert [(p.title, p.published, p.type) for p in outcome.papers] == [
        ("Good one", "2001-02-03", "article"),
        ("Good two", "2005-07", "inproceedings"),
    ]
    assert outcome.papers[1].author_names == ["Jane Doe Jr."]
    assert [(s.item, s.reason) for s in outcome.skipped] == [
        ("record 2 (line 5)", "no title (no TI, T1, CT or ST line)")
    ]
    assert [w.reason for w in outcome.warnings] == ["no ER line at the end of the file"]


def test_ris_variants_that_used_to_lose_records_silently() -> None:
    """Lone-CR line endings, indented tags and a stray ER: every record read, nothing skipped."""
    from retrieval.sources.files.ris import parse_ris

    cr_only = "TY  - JOUR\rTI  - First paper\rAU  - Smith, Ann\rER  - \rTY  - JOUR\rTI  - Second paper\rER  - \r"
    outcome = parse_ris(cr_only)
    assert [p.title for p in outcome.papers] == ["First paper", "Second paper"] and outcome.skipped == []
    indented = "TY  - JOUR\nTI  - First paper\nER  - \n  TY  - JOUR\n  TI  - Indented paper\n  ER  - \n"
    outcome = parse_ris(indented)
    assert [p.title for p in outcome.papers] == ["First paper", "Indented paper"] and outcome.skipped == []
    stray = "TY  - JOUR\nTI  - Only paper\nER  - \nER  - \n"
    outcome = parse_ris(stray)
    assert [p.title for p in outcome.papers] == ["Only paper"] and outcome.skipped == []
    assert [w.reason for w in outcome.warnings] == ["an ER line with no record open; ignored"]


def test_csl_and_ris_names_keep_their_family_part() -> None:
    csl = parse_csl_json(json.dumps([{"id": "a", "title": "T", "author": [
        {"family": "Vos", "non-dropping-particle": "de", "given": "Martijn"},
        {"family": "Beethoven", "dropping-particle": "van", "given": "Ludwig"},
        {"family": "Da San Martino", "given": "Giovanni"},
        {"family": "Doe", "given": "Jane"},
        {"literal": "Barnes and Noble"}],
        "editor": [{"family": "Farha", "non-dropping-particle": "Abu", "given": "Ibrahim"}, {"literal": "X Y"}]}]))
    assert [(a.name, a.family, a.particle) for a in csl.papers[0].authors] == [
        ("Martijn de Vos", "de Vos", None),  # a non-dropping particle is part of the last name
        ("Ludwig van Beethoven", "van Beethoven", "van"),  # a dropping one is BibTeX's von
        ("Giovanni Da San Martino", "Da San Martino", None),
        ("Jane Doe", None, None),  # the display name says as much
        ("Barnes and Noble", None, None),
    ]
    assert csl.papers[0].editors == ["Ibrahim Abu Farha", "X Y"]
    assert csl.papers[0].editor_families["Ibrahim Abu Farha"].family == "Abu Farha"
    ris = parse_ris("TY  - JOUR\nTI  - T\nAU  - de Vos, Martijn\nAU  - Da San Martino, Giovanni\n"
                    "AU  - van Beethoven, Ludwig, Jr\nAU  - John Smith\nED  - de Rijke, Maarten\nER  - \n")
    assert [(a.name, a.family, a.particle) for a in ris.papers[0].authors] == [
        ("Martijn de Vos", "de Vos", "de"),
        ("Giovanni Da San Martino", "Da San Martino", None),
        ("Ludwig van Beethoven Jr", "van Beethoven", "van"),
        ("John Smith", None, None),
    ]
    assert ris.papers[0].editor_families["Maarten de Rijke"].particle == "de"
