"""Property tests: no parser input, however broken, escapes as anything but a ParseOutcome.

Every returned paper validates and has a title; every skip names the item and a reason.
Inputs are arbitrary text and real entries mutated at random (braces, quotes, "@", backslashes
inserted or deleted). The writer must round-trip arbitrary papers.
"""

from __future__ import annotations

import gzip
import json
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval.errors import ParseError
from retrieval.records.paper import Paper
from retrieval.sources.files.arxiv_snapshot import parse_arxiv_snapshot
from retrieval.sources.files.base import ParseOutcome
from retrieval.sources.files.bibtex import parse_bibtex
from retrieval.sources.files.bibtex_writer import to_bibtex
from retrieval.sources.files.csljson import parse_csl_json
from retrieval.sources.files.detect import detect_format, parse_text
from retrieval.sources.files.jsonl import parse_jsonl
from retrieval.sources.files.oai import parse_oai_dc
from retrieval.sources.files.ris import parse_ris
from retrieval.sources.markup.latex import latex_to_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "files"
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Real material to mutate: a few PETSc entries (with accents, math, macros), two snapshot lines,
# three OAI records, RIS and CSL exports.
_PETSC = (FIXTURES / "petsc.bib").read_text(encoding="utf-8")
BIBTEX_SAMPLE = _PETSC[_PETSC.index("@book{da2016") : _PETSC.index("@article{chung1993")]
BIBTEX_SAMPLE += _PETSC[_PETSC.index("@inproceedings{bozdaug2005parallel") :][:1500]
SNAPSHOT_SAMPLE = "\n".join(
    (FIXTURES / "arxiv_snapshot_head60.jsonl").read_text(encoding="utf-8").splitlines()[:2]
)
_OAI = gzip.decompress((FIXTURES / "quant-ph_oai_dc_50.xml.gz").read_bytes()).decode("utf-8")
OAI_SAMPLE = _OAI[: _OAI.index("<record>", _OAI.index("0704.0046"))] + "</ListRecords>\n"
RIS_SAMPLE = (FIXTURES / "ris_endnote.ris").read_text(encoding="utf-8")
CSL_SAMPLE = (FIXTURES / "csl_list.json").read_text(encoding="utf-8")[:6000]
SPECIALS = "{}\"'@,=#%\\$~^_&\n\t <>/:;[]-`"


def check(outcome: ParseOutcome, fmt: str) -> None:
    assert isinstance(outcome, ParseOutcome)
    assert outcome.format == fmt
    for paper in outcome.papers:
        assert isinstance(paper, Paper)
        assert paper.title.strip()
        Paper.model_validate(paper.model_dump())  # a whole, valid record: never partial
        assert paper.provenance and paper.provenance[-1].source == fmt
    for item in outcome.skipped + outcome.warnings:
        assert item.item and item.reason


@st.composite
def mutated(draw: st.DrawFn, sample: str) -> str:
    """The sample with a few random insertions, deletions and replacements."""
    text = sample
    for _ in range(draw(st.integers(1, 6))):
        position = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "replace", "truncate"]))
        char = draw(
            st.one_of(st.sampled_from(SPECIALS), st.characters(blacklist_categories=["Cs"]))
        )
        if action == "insert":
            text = text[:position] + char + text[position:]
        elif action == "delete":
            text = text[:position] + text[position + draw(st.integers(1, 20)) :]
        elif action == "replace":
            text = text[:position] + char + text[position + 1 :]
        else:
            text = text[:position]
    return text


ANY_TEXT = st.text(alphabet=st.one_of(st.sampled_from(SPECIALS), st.characters()), max_size=300)


@PROPERTY
@given(st.one_of(ANY_TEXT, mutated(BIBTEX_SAMPLE)))
def test_bibtex_never_raises(text: str) -> None:
    check(parse_bibtex(text), "bibtex")


@PROPERTY
@given(st.one_of(ANY_TEXT, mutated(SNAPSHOT_SAMPLE)))
def test_snapshot_never_raises(text: str) -> None:
    check(parse_arxiv_snapshot(text), "arxiv-snapshot")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "title",
                    "authors",
                    "author",
                    "published",
                    "year",
                    "issued",
                    "date-parts",
                    "doi",
                    "DOI",
                    "name",
                    "family",
                    "given",
                    "literal",
                    "container-title",
                    "categories",
                    "id",
                ]
            ),
            children,
            max_size=6,
        )
    ),
    max_leaves=20,
)


@PROPERTY
@given(st.one_of(ANY_TEXT, JSON_VALUES.map(json.dumps)))
def test_jsonl_never_raises(text: str) -> None:
    check(parse_jsonl(text), "jsonl")


@PROPERTY
@given(JSON_VALUES)
def test_csl_json_never_raises_on_any_json(value: object) -> None:
    check(parse_csl_json(json.dumps(value)), "csl-json")


@PROPERTY
@given(st.one_of(ANY_TEXT, mutated(CSL_SAMPLE)))
def test_csl_json_text_gives_an_outcome_or_a_parse_error(text: str) -> None:
    try:
        outcome = parse_csl_json(text, name="refs.json")
    except ParseError as error:
        assert "refs.json" in error.user_message
    else:
        check(outcome, "csl-json")


RIS_LINES = st.lists(
    st.one_of(
        st.tuples(
            st.sampled_from(["TY", "TI", "T1", "AU", "PY", "DA", "KW", "DO", "UR", "ER", "AB"]),
            st.text(max_size=30),
        ).map(lambda pair: f"{pair[0]}  - {pair[1]}"),
        st.text(max_size=30),
    ),
    max_size=25,
).map("\n".join)


@PROPERTY
@given(st.one_of(ANY_TEXT, RIS_LINES, mutated(RIS_SAMPLE)))
def test_ris_never_raises(text: str) -> None:
    check(parse_ris(text), "ris")


@PROPERTY
@given(st.one_of(ANY_TEXT, mutated(OAI_SAMPLE)))
def test_oai_gives_an_outcome_or_a_parse_error(text: str) -> None:
    try:
        outcome = parse_oai_dc(text, name="records.xml")
    except ParseError as error:
        assert "records.xml" in error.user_message
    else:
        check(outcome, "oai-dc")


@PROPERTY
@given(st.one_of(ANY_TEXT, mutated(BIBTEX_SAMPLE), mutated(RIS_SAMPLE), mutated(SNAPSHOT_SAMPLE)))
def test_detection_and_dispatch_never_raise_anything_else(text: str) -> None:
    try:
        fmt = detect_format(text, "upload.dat")
        outcome = parse_text(text, fmt, "upload.dat")
    except ParseError as error:
        assert "upload.dat" in error.user_message
    else:
        check(outcome, fmt)


@PROPERTY
@given(ANY_TEXT)
def test_latex_to_text_never_raises(text: str) -> None:
    assert isinstance(latex_to_text(text), str)
    assert isinstance(latex_to_text(text, tilde_is_space=False), str)


# --- writer round trip --------------------------------------------------------------------------

TEXT = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=40)
NAME = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=25)
PAPER = st.builds(
    lambda title, names, venue, year, month, doi: {
        "title": title,
        "authors": [{"name": name} for name in names],
        "venue": venue,
        "published": f"{year}-{month:02d}" if month else str(year),
        "doi": doi,
        "type": "article",
    },
    TEXT,
    st.lists(NAME, max_size=4),
    st.none() | TEXT.filter(lambda v: not v.strip().lower().startswith(("http", "arxiv"))),
    st.integers(1000, 2025),
    st.integers(0, 12),
    st.none() | st.from_regex(r"10\.[0-9]{4,6}/[A-Za-z0-9._;()/-]{1,20}", fullmatch=True),
)


def _nfc(value: object) -> object:
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, list):
        return [_nfc(item) for item in value]
    return value


def _view(paper: Paper) -> tuple[object, ...]:
    return tuple(
        _nfc(v) for v in (paper.title, paper.author_names, paper.year, paper.venue, paper.doi)
    )


@PROPERTY
@given(st.lists(PAPER, min_size=1, max_size=3))
def test_to_bibtex_round_trips_arbitrary_papers(records: list[dict[str, object]]) -> None:
    papers = []
    for record in records:
        try:
            papers.append(Paper.model_validate(record))
        except ValueError:
            continue  # e.g. a title or name that is only control characters: not a paper
    text = to_bibtex(papers)
    outcome = parse_bibtex(text)
    assert outcome.skipped == []
    assert [_view(p) for p in outcome.papers] == [_view(p) for p in papers]


def test_a_lone_surrogate_in_xml_text_is_a_parse_error_not_a_crash() -> None:
    # found by the property test above: str.encode("utf-8") refused it
    with pytest.raises(ParseError) as caught:
        parse_oai_dc("\ud800", name="records.xml")
    assert "records.xml" in caught.value.user_message
