"""API responses saved as files: detected by content, parsed by the network parsers, same ids.

The arXiv, OpenAlex and Crossref cases use real recorded responses read at run time from the
shared fixtures (``{url, status_code, body}`` cassettes and raw 2016 feeds): each body is written
to a file as the API sent it, envelope included, and read with ``parse_file``. No Semantic
Scholar or DBLP recording exists, so those answers are written here in the APIs' own shapes.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from retrieval.errors import ParseError
from retrieval.records.paper import Paper
from retrieval.sources.apis.arxiv import ArxivSource
from retrieval.sources.apis.crossref import CrossrefSource
from retrieval.sources.apis.openalex import OpenAlexSource
from retrieval.sources.files.detect import FORMATS, detect_format, parse_file, parse_text
from retrieval.sources.providers.crossref import parse_crossref_page
from retrieval.sources.providers.openalex import parse_works_page
from tests.sources.replay import FakeClock, Replay, load, make_settings

_SHARED_FIXTURES = Path(__file__).resolve().parents[4] / "shared" / "fixtures"  # ../shared beside the project
SHARED = _SHARED_FIXTURES if _SHARED_FIXTURES.is_dir() else None
FILES = Path(__file__).resolve().parents[2] / "fixtures" / "files"
SAVED_FORMATS = ("arxiv-atom", "openalex", "crossref", "semantic-scholar", "dblp")


def _shared(relative: str) -> Path:
    """A file of the shared fixtures; the test is skipped when they are not on this machine."""
    if SHARED is None:
        pytest.skip("the shared fixtures (../shared/fixtures next to the project) are not here")
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"shared fixture {relative} is missing")
    return path


def _shared_glob(pattern: str) -> list[str]:
    """Relative names for parametrize (empty when the shared fixtures are absent)."""
    if SHARED is None:
        return []
    return sorted(str(path.relative_to(SHARED)) for path in SHARED.glob(pattern))


def _raw(relative: str) -> bytes:
    """The bytes the API sent: a cassette's body (as replayed to the network clients), or the
    file itself for raw saved responses (2016 .xml feeds, bare OpenAlex objects)."""
    path = _shared(relative)
    data = json.loads(path.read_text(encoding="utf-8")) if path.suffix == ".json" else None
    if isinstance(data, dict) and {"url", "status_code", "body"} <= data.keys():
        return load(path).body
    return path.read_bytes()


def _body(relative: str) -> Any:
    return json.loads(_raw(relative))


def _save(tmp_path: Path, relative: str, name: str = "saved.txt") -> Path:
    out = tmp_path / name
    out.write_bytes(_raw(relative))
    return out


def _write_json(tmp_path: Path, document: Any, name: str = "saved.json") -> Path:
    out = tmp_path / name
    out.write_text(json.dumps(document), encoding="utf-8")
    return out


def _ids(papers: list[Paper]) -> list[str]:
    return [paper.id for paper in papers]


OPENALEX_SAMPLE = "openalex/commonmeta-py_cassettes/test-openalex_reader__test_get_random_id_from_openalex__1.json"


# --- arXiv Atom ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "relative", [r for r in _shared_glob("arxiv/recorded_2026/*.json") if "id_abc_" not in r]
)
def test_every_recorded_arxiv_feed_parses_each_entry(tmp_path: Path, relative: str) -> None:
    raw = _raw(relative)
    outcome = parse_file(_save(tmp_path, relative))
    assert outcome.format == "arxiv-atom"
    assert len(outcome.papers) == raw.count(b"<entry>") and outcome.skipped == []
    for paper in outcome.papers:
        assert paper.arxiv_id and paper.authors and paper.abstract and paper.published
        assert [(p.source, p.source_id) for p in paper.provenance] == [
            ("arxiv", f"{paper.arxiv_id}{paper.arxiv_version or ''}")
        ]


def test_arxiv_feed_fields_and_utf8_names(tmp_path: Path) -> None:
    outcome = parse_file(_save(tmp_path, "arxiv/recorded_2026/q_testing_s0_m10_bc5a6c384fe9.json", "query.xml"))
    first, second = outcome.papers[:2]
    assert first.title.startswith("Testing Deep Learning Models: A First Comparative Study")
    assert first.author_names == ["Mohit Kumar Ahuja", "Arnaud Gotlieb", "Helge Spieker"]
    assert (first.arxiv_id, first.arxiv_version, first.published) == ("2202.12139", "v1", "2022-02-24")
    assert first.venue is not None and first.abstract is not None
    assert first.doi == "10.1109/icstw55395.2022.00035" and first.venue.startswith("Artificial Intelligence in")
    assert first.abstract.startswith("Deep Learning (DL) has revolutionized")
    assert second.author_names[0] == "Aurora Ramírez"  # the bytes arXiv sent, decoded as UTF-8


@pytest.mark.parametrize("relative", _shared_glob("arxiv/atom_2016/*.xml"))
def test_2016_arxiv_feeds_parse(tmp_path: Path, relative: str) -> None:
    raw = _raw(relative)
    outcome = parse_file(_save(tmp_path, relative, "old.xml"))
    assert outcome.format == "arxiv-atom"
    assert len(outcome.papers) == raw.count(b"<entry>") > 0 and outcome.skipped == []


def test_2016_feed_content(tmp_path: Path) -> None:
    [paper] = parse_file(_save(tmp_path, "arxiv/atom_2016/au_del_maestro_AND_ti_checkerboard.xml")).papers
    assert paper.title == "From stripe to checkerboard order on the square lattice in the presence of quenched disorder"
    assert paper.author_names == ["Adrian Del Maestro", "Bernd Rosenow", "Subir Sachdev"]
    assert (paper.arxiv_id, paper.published) == ("cond-mat/0603029", "2006-03-02")
    assert paper.venue == "Phys. Rev. B 74, 024520 (2006)"
    assert paper.doi == "10.1103/physrevb.74.024520" and paper.abstract and "  " not in paper.abstract


def test_arxiv_error_feed_is_a_parse_error_with_the_api_message(tmp_path: Path) -> None:
    path = _save(tmp_path, "arxiv/recorded_2026/id_abc_s0_m100_b79c8dcf6bc3.json", "lookup.xml")
    assert detect_format(path.read_text(encoding="utf-8")) == "arxiv-atom"
    with pytest.raises(ParseError) as caught:
        parse_file(path)
    message = caught.value.user_message
    assert str(path) in message and "arXiv error response" in message
    assert "incorrect id format for abc" in message and "no title" not in message


def test_arxiv_feed_with_no_results_is_empty_not_an_error(tmp_path: Path) -> None:
    outcome = parse_file(_save(tmp_path, "arxiv/recorded_2026/id_0000.0000_s0_m100_8b51d9633a68.json"))
    assert (outcome.format, outcome.papers, outcome.skipped) == ("arxiv-atom", [], [])


def test_truncated_arxiv_feed_names_the_file(tmp_path: Path) -> None:
    raw = _raw("arxiv/recorded_2026/id_1605.08386_s0_m100_199195aa31ad.json")
    cut = tmp_path / "cut.xml"
    cut.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ParseError, match=r"cut\.xml is not a well-formed Atom feed"):
        parse_file(cut, "arxiv-atom")


def test_an_atom_feed_not_from_arxiv_is_refused() -> None:
    blog = (
        '<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">'
        "<title>Example blog</title><id>urn:uuid:60a76c80</id><entry><title>Hello</title>"
        "<id>urn:uuid:1225c695</id></entry></feed>"
    )
    with pytest.raises(ParseError, match=r"blog\.xml is not in a format paperbot reads"):
        detect_format(blog, "blog.xml")


# --- OpenAlex -----------------------------------------------------------------------------------


def test_openalex_single_work_keeps_authors_year_venue_abstract(tmp_path: Path) -> None:
    outcome = parse_file(_save(tmp_path, "openalex/openalex-python_fixtures/W2741809807.json", "work.json"))
    assert outcome.format == "openalex"  # was read as CSL-JSON with no authors, year or venue
    [paper] = outcome.papers
    assert paper.title.startswith("The state of OA: a large-scale analysis")
    assert paper.author_names[:2] == ["Heather Piwowar", "Jason Priem"] and len(paper.authors) == 9
    assert paper.authors[1].orcid == "0000-0001-6187-6610"
    assert (paper.year, paper.venue, paper.openalex_id) == (2018, "PeerJ", "W2741809807")
    assert paper.abstract is not None
    assert paper.abstract.startswith("Despite growing interest in Open Access (OA)")
    assert [(p.source, p.source_id) for p in paper.provenance] == [("openalex", "W2741809807")]


def test_openalex_cassette_work_and_older_schema(tmp_path: Path) -> None:
    [posted] = parse_file(_save(
        tmp_path, "openalex/commonmeta-py_cassettes/test-openalex_reader__test_posted_content__0.json"
    )).papers
    assert posted.id == "doi:10.1101/097196" and posted.venue == "bioRxiv (Cold Spring Harbor Laboratory)"
    assert posted.author_names[0] == "Martin Fenner" and posted.published == "2016-12-28" and posted.abstract
    [older] = parse_file(_save(tmp_path, "openalex/openalex-python_fixtures/W-api-response.json")).papers
    assert older.venue == "Physical Review Letters" and older.year == 2017  # host_venue era


def test_openalex_works_lists(tmp_path: Path) -> None:
    search = parse_file(_save(tmp_path, "openalex/paper-qa_cassettes/test_title_search_paper_attributes2___3.json"))
    assert search.format == "openalex" and _ids(search.papers) == ["doi:10.1038/s42256-024-00832-8", "arxiv:2304.05376"]
    first = search.papers[0]
    assert first.title == "Augmenting large language models with chemistry tools"
    assert first.author_names[0] == "Andres M. Bran" and first.venue and first.year == 2024
    sample = parse_file(_save(tmp_path, OPENALEX_SAMPLE))
    assert len(sample.papers) == 5 and all(p.openalex_id and p.published for p in sample.papers)


def test_openalex_untitled_work_is_skipped_with_its_id(tmp_path: Path) -> None:
    untitled = "openalex/commonmeta-py_cassettes/test-openalex_reader__test_journal_article_original_language__0.json"
    outcome = parse_file(_save(tmp_path, untitled))
    assert outcome.format == "openalex" and outcome.papers == []
    assert [(s.item, s.reason) for s in outcome.skipped] == [("OpenAlex work W4230972471", "no title")]


def test_openalex_author_profile_is_refused_and_authors_in_a_list_are_skipped(tmp_path: Path) -> None:
    refused = r"profile\.json is an OpenAlex author profile \(A5023888391\), not OpenAlex works"
    with pytest.raises(ParseError, match=refused):
        parse_file(_save(tmp_path, "openalex/openalex-python_fixtures/A5023888391.json", "profile.json"))
    mixed = {"meta": {"count": 2}, "results": [
        _body("openalex/openalex-python_fixtures/A5023888391.json"),
        _body("openalex/openalex-python_fixtures/W2741809807.json"),
    ]}
    outcome = parse_file(_write_json(tmp_path, mixed))
    assert _ids(outcome.papers) == ["doi:10.7717/peerj.4375"]
    assert [s.reason for s in outcome.skipped] == ["an OpenAlex author profile (A5023888391), not a work"]


def test_openalex_error_body_is_a_parse_error(tmp_path: Path) -> None:
    # OpenAlex's error shape (no recorded one exists): {"error": ..., "message": ...}
    body = {"error": "Invalid query parameters error.",
            "message": "filter is not a valid field. Valid fields are underscore or hyphenated versions of: ..."}
    path = _write_json(tmp_path, body, "works.json")
    with pytest.raises(ParseError) as caught:
        parse_file(path)
    message = caught.value.user_message
    assert str(path) in message and "OpenAlex error response" in message
    assert "Invalid query parameters error." in message and "no title" not in message


def test_openalex_json_lines_of_works(tmp_path: Path) -> None:
    """OpenAlex ships its snapshot as JSON Lines of works; a broken line costs only itself."""
    results = _body(OPENALEX_SAMPLE)["results"]
    lines = [json.dumps(work) for work in results]
    lines.insert(2, lines[2][:100])
    path = tmp_path / "part_000.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    outcome = parse_file(path)
    assert outcome.format == "openalex" and len(outcome.papers) == 5
    assert [s.item for s in outcome.skipped] == ["line 3"] and outcome.skipped[0].reason.startswith("invalid JSON")


# --- Crossref -----------------------------------------------------------------------------------

CROSSREF_WORK = "crossref/habanero_cassettes/test-works__test_works_with_many_ids__1.json"
CROSSREF_LIST = "crossref/habanero_cassettes/test-journals__test_journals_works__0.json"


def test_crossref_single_work_with_and_without_envelope(tmp_path: Path) -> None:
    enveloped = parse_file(_save(tmp_path, CROSSREF_WORK, "work.json"))
    bare = parse_file(_write_json(tmp_path, _body(CROSSREF_WORK)["message"], "bare.json"))
    assert enveloped.format == bare.format == "crossref"
    [paper] = enveloped.papers
    assert paper.title.startswith("Growth hormone secretagogue increases muscle strength")
    assert paper.author_names[0] == "Richard L. Lieber" and len(paper.authors) == 12
    assert (paper.published, paper.venue) == ("1997-07", "Journal of Orthopaedic Research")
    assert paper.abstract is not None
    assert paper.abstract.startswith("Twenty‐two beagles") and "<jats:" not in paper.abstract
    assert [(p.source, p.source_id) for p in paper.provenance] == [("crossref", "10.1002/jor.1100150407")]
    assert [p.model_dump(exclude={"provenance"}) for p in bare.papers] == [paper.model_dump(exclude={"provenance"})]


def test_crossref_real_bare_work_and_items_file(tmp_path: Path) -> None:
    """commonmeta-py keeps Crossref data without the envelope: one work, and {"items": [...]}."""
    [work] = parse_file(_save(tmp_path, "crossref/commonmeta-py_fixtures/crossref.json", "work.json")).papers
    assert work.id == "doi:10.7554/elife.01567" and work.venue == "eLife" and work.year == 2014
    assert work.author_names[0] == "Martial Sankar" and work.abstract
    items = parse_file(_save(tmp_path, "crossref/commonmeta-py_fixtures/crossref-list.json", "items.json"))
    assert items.format == "crossref" and len(items.papers) == 20
    assert items.papers[0].author_names == ["Newell P. Campbell"] and items.papers[0].venue == "AAPG Bulletin"


def test_crossref_list_with_envelope_message_only_items_only_and_bare_array(tmp_path: Path) -> None:
    body = _body(CROSSREF_LIST)
    forms = {
        "envelope": _save(tmp_path, CROSSREF_LIST, "envelope.json"),
        "message": _write_json(tmp_path, body["message"], "message.json"),
        "items": _write_json(tmp_path, {"items": body["message"]["items"]}, "items.json"),
        "array": _write_json(tmp_path, body["message"]["items"], "array.json"),
    }
    outcomes = {form: parse_file(path) for form, path in forms.items()}
    assert {o.format for o in outcomes.values()} == {"crossref"}
    papers = outcomes["envelope"].papers
    assert len(papers) == 20 and all(p.abstract and p.authors and p.venue and p.year for p in papers)
    for outcome in outcomes.values():
        assert _ids(outcome.papers) == _ids(papers) and outcome.skipped == []


def test_crossref_untitled_items_are_skipped_with_their_doi_and_type(tmp_path: Path) -> None:
    members = "crossref/habanero_cassettes/test-members__test_members_mixed_ids_works_warn__2.json"
    outcome = parse_file(_save(tmp_path, members))
    assert len(outcome.papers) == 4 and len(outcome.skipped) == 16
    assert outcome.skipped[0].item == "Crossref work 10.1371/journal.pone.0248873.s003 (component)"


@pytest.mark.parametrize(
    ("relative", "api_said"),
    [
        ("crossref/habanero_cassettes/test-cursor__test_cursor_fails_cursor_value__0.json",
         "Cursor specified but it is invalid (thing)"),
        ("crossref/habanero_cassettes/test-works__test_works_query_filters_not_allowed_with_dois__0.json",
         "This route does not support field query parameters"),
    ],
)
def test_crossref_error_bodies_are_parse_errors_saying_what_the_api_said(
    tmp_path: Path, relative: str, api_said: str
) -> None:
    path = _save(tmp_path, relative, "works.json")
    assert detect_format(path.read_text(encoding="utf-8"), "works.json") == "crossref"
    with pytest.raises(ParseError) as caught:
        parse_file(path)
    message = caught.value.user_message
    assert str(path) in message and "Crossref error response" in message and api_said in message
    assert "no title" not in message


def test_crossref_response_that_holds_no_works_is_refused(tmp_path: Path) -> None:
    path = _save(tmp_path, "crossref/habanero_cassettes/test-registration_agency__test_registration_agency__0.json")
    with pytest.raises(ParseError, match=r"is a Crossref 'work-agency' response, not Crossref works"):
        parse_file(path)


# --- detection: saved responses versus CSL-JSON -------------------------------------------------


@pytest.mark.parametrize("name", ["csl_item.json", "csl_list.json"])
def test_csl_json_stays_csl_json(name: str) -> None:
    text = (FILES / name).read_text(encoding="utf-8")
    assert detect_format(text) == detect_format(text, "export.txt") == "csl-json"


def test_csl_items_with_list_titles_are_not_taken_for_crossref() -> None:
    """Some CSL exporters write titles as lists too; without Crossref's own keys it stays CSL."""
    item = {"id": "smith2020", "type": "article-journal", "title": ["Graph neural networks"],
            "container-title": ["Journal of Examples"], "DOI": "10.1234/jex.2020.1",
            "author": [{"family": "Smith", "given": "Ann"}], "issued": {"date-parts": [[2020, 3]]}}
    assert detect_format(json.dumps([item])) == "csl-json"
    assert detect_format(json.dumps({"items": [item]})) == "csl-json"


@pytest.mark.parametrize(
    ("relative", "fmt"),
    [
        (CROSSREF_WORK, "crossref"),
        (CROSSREF_LIST, "crossref"),
        ("crossref/commonmeta-py_fixtures/crossref.json", "crossref"),
        ("crossref/commonmeta-py_fixtures/crossref-list.json", "crossref"),
        # Crossref's citeproc-JSON transform: string titles, but Crossref's own keys: Crossref
        ("crossref/habanero_cassettes/test-content_negotation__test_content_negotiation_citeproc_json__1.json",
         "crossref"),
        ("openalex/openalex-python_fixtures/W2741809807.json", "openalex"),
        ("openalex/openalex-python_fixtures/W-api-response.json", "openalex"),
        ("openalex/paper-qa_cassettes/test_title_search_paper_attributes0___3.json", "openalex"),
        ("arxiv/atom_2016/id_list_1111.2011v2.xml", "arxiv-atom"),
        ("arxiv/recorded_2026/q_testing_s0_m10_bc5a6c384fe9.json", "arxiv-atom"),
    ],
)
def test_saved_responses_are_detected_by_content_whatever_the_extension(relative: str, fmt: str) -> None:
    text = _raw(relative).decode("utf-8")
    for name in (None, "export.json", "export.txt", "refs.bib", "refs.xml"):
        assert detect_format(text, name) == fmt


def test_bare_work_and_list_of_bare_works_are_crossref_not_csl() -> None:
    work = _body(CROSSREF_WORK)["message"]
    assert detect_format(json.dumps(work), "one.json") == "crossref"
    assert detect_format(json.dumps([work]), "list.json") == "crossref"


# --- gzip, explicit formats, errors -------------------------------------------------------------


@pytest.mark.parametrize(
    "relative",
    [CROSSREF_LIST, "openalex/openalex-python_fixtures/W2741809807.json",
     "arxiv/recorded_2026/q_testing_s0_m10_bc5a6c384fe9.json"],
)
def test_gzipped_saved_responses(tmp_path: Path, relative: str) -> None:
    plain = _save(tmp_path, relative, "saved.json")
    zipped = tmp_path / "saved.json.gz"
    zipped.write_bytes(gzip.compress(plain.read_bytes()))
    one, other = parse_file(plain), parse_file(zipped)
    assert one.format == other.format and _ids(one.papers) == _ids(other.papers) and one.papers


def test_explicit_format_and_format_names() -> None:
    assert set(SAVED_FORMATS) <= set(FORMATS)
    work = json.dumps(_body("openalex/openalex-python_fixtures/W2741809807.json"))
    assert parse_text(work, "openalex", "w.json").papers[0].openalex_id == "W2741809807"
    forced = parse_text(work, "csl-json", "w.json")  # what detection used to pick
    assert forced.format == "csl-json" and forced.papers[0].authors == []


def test_unknown_content_lists_every_format_and_the_option() -> None:
    with pytest.raises(ParseError) as caught:
        detect_format("plain prose without any structure", "notes.txt")
    message = caught.value.user_message
    assert "pass --format FMT" in message and all(fmt in message for fmt in FORMATS)


def test_truncated_saved_json_names_the_file(tmp_path: Path) -> None:
    raw = _raw(CROSSREF_WORK)
    cut = tmp_path / "cut.json"
    cut.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ParseError, match=r"cut\.json is not valid JSON .*line 1, column \d+"):
        parse_file(cut, "crossref")


# --- a saved response and the network parser agree ----------------------------------------------


def _provenance(papers: list[Paper]) -> list[tuple[str, str | None]]:
    return [(p.provenance[0].source, p.provenance[0].source_id) for p in papers]


def _same(saved: list[Paper], fetched: list[Paper]) -> None:
    assert _ids(saved) == _ids(fetched) and _provenance(saved) == _provenance(fetched)
    def fields(papers: list[Paper]) -> list[dict[str, Any]]:
        return [paper.model_dump(exclude={"provenance"}) for paper in papers]

    assert fields(saved) == fields(fetched)


def test_saved_and_fetched_give_the_same_records(tmp_path: Path) -> None:
    clock = FakeClock()
    settings = make_settings()
    arxiv_rec = "arxiv/recorded_2026/id_0808.05394_1707.08567_s0_m100_42e5aa0ec3af.json"
    fetched = ArxivSource(settings, Replay([load(_shared(arxiv_rec))]).client(), clock.sleep, clock=clock)
    _same(parse_file(_save(tmp_path, arxiv_rec)).papers, fetched.by_ids(["0808.05394", "1707.08567"]).items)

    openalex_rec = "openalex/paper-qa_cassettes/test_doi_search_paper_attributes0___2.json"
    source = OpenAlexSource(settings, Replay([load(_shared(openalex_rec))]).client(), clock.sleep, clock=clock)
    work = source.work_by_doi("10.1016/j.xgen.2025.100814")
    assert work is not None and len(work.items) == 1
    _same(parse_file(_save(tmp_path, openalex_rec)).papers, work.items)

    replay = Replay([load(_shared(CROSSREF_WORK))])
    crossref_source = CrossrefSource(settings, replay.client(), clock.sleep, clock=clock)
    crossref_work = crossref_source.work_by_doi("10.1002/jor.1100150407")
    assert crossref_work is not None and len(crossref_work.items) == 1
    _same(parse_file(_save(tmp_path, CROSSREF_WORK)).papers, crossref_work.items)


def test_saved_lists_and_the_page_parsers_agree(tmp_path: Path) -> None:
    crossref_list = parse_file(_save(tmp_path, CROSSREF_LIST))
    _same(crossref_list.papers, parse_crossref_page(_body(CROSSREF_LIST)).papers)
    _same(parse_file(_save(tmp_path, OPENALEX_SAMPLE)).papers, parse_works_page(_body(OPENALEX_SAMPLE)).papers)


# --- Semantic Scholar (hand-written in the Graph API's shapes) ----------------------------------

S2_ATTENTION = {
    "paperId": "204e3073870fae3d05bcbc2f6a8e263d9b72e776",
    "externalIds": {"DBLP": "conf/nips/VaswaniSPUJGKP17", "MAG": "2963403868", "ArXiv": "1706.03762",
                    "CorpusId": 13756489},
    "corpusId": 13756489,
    "url": "https://www.semanticscholar.org/paper/204e3073870fae3d05bcbc2f6a8e263d9b72e776",
    "title": "Attention is All you Need",
    "abstract": "The dominant sequence transduction models are based on complex recurrent or convolutional "
                "neural networks in an encoder-decoder configuration.",
    "venue": "Neural Information Processing Systems",
    "publicationVenue": {"id": "d9720b90-d60b-48bc-9df8-87a30b9a60dd", "name": "Neural Information Processing Systems",
                         "type": "conference", "alternate_names": ["NeurIPS", "NIPS"], "url": "http://neurips.cc/"},
    "year": 2017,
    "referenceCount": 41,
    "citationCount": 118000,
    "influentialCitationCount": 15000,
    "isOpenAccess": False,
    "openAccessPdf": None,
    "fieldsOfStudy": ["Computer Science"],
    "s2FieldsOfStudy": [{"category": "Computer Science", "source": "external"},
                        {"category": "Computer Science", "source": "s2-fos-model"}],
    "publicationTypes": ["JournalArticle", "Conference"],
    "publicationDate": "2017-06-12",
    "journal": {"name": "ArXiv", "volume": "abs/1706.03762"},
    "authors": [{"authorId": "40348417", "name": "Ashish Vaswani"}, {"authorId": "1846258", "name": "Noam M. Shazeer"},
                {"authorId": "3877127", "name": "Niki Parmar"}],
}
S2_STATE_OF_OA = {
    "paperId": "b9a1d1e3c2a6e7f4bd1bc0c3b5d7a1f0e2c4d6a8",
    "externalIds": {"MAG": "2741809807", "DOI": "10.7717/peerj.4375", "PubMed": "29456894", "CorpusId": 3508536},
    "title": "The state of OA: a large-scale analysis of the prevalence and impact of Open Access articles",
    "venue": "PeerJ",
    "year": 2018,
    "citationCount": 1100,
    "isOpenAccess": True,
    "publicationTypes": ["JournalArticle"],
    "publicationDate": "2018-02-13",
    "journal": {"name": "PeerJ", "volume": "6", "pages": "e4375"},
    "authors": [{"authorId": "2349451", "name": "Heather A. Piwowar"}, {"authorId": "2598400", "name": "J. Priem"}],
}


def test_semantic_scholar_paper_and_lists(tmp_path: Path) -> None:
    single = parse_file(_write_json(tmp_path, S2_ATTENTION, "paper.json"))
    assert single.format == "semantic-scholar"
    [paper] = single.papers
    assert paper.id == "arxiv:1706.03762"  # the same record an arXiv ingest makes
    assert paper.author_names == ["Ashish Vaswani", "Noam M. Shazeer", "Niki Parmar"]
    assert (paper.published, paper.type) == ("2017-06-12", "inproceedings")
    assert paper.venue == "Neural Information Processing Systems"
    assert paper.abstract is not None
    assert paper.volume is None and paper.abstract.startswith("The dominant sequence")
    assert paper.categories == ["Computer Science"] and paper.citation_count == 118000
    assert [(p.source, p.source_id) for p in paper.provenance] == [("semantic-scholar", S2_ATTENTION["paperId"])]

    search = {"total": 2, "offset": 0, "next": 2, "data": [S2_ATTENTION, S2_STATE_OF_OA]}
    listed = parse_file(_write_json(tmp_path, search, "search.json"))
    assert _ids(listed.papers) == ["arxiv:1706.03762", "doi:10.7717/peerj.4375"]
    oa = listed.papers[1]
    assert (oa.venue, oa.volume, oa.pages, oa.type, oa.open_access) == ("PeerJ", "6", "e4375", "article", True)

    batch = parse_file(_write_json(tmp_path, [S2_STATE_OF_OA, None], "batch.json"))  # /paper/batch
    assert _ids(batch.papers) == ["doi:10.7717/peerj.4375"]
    assert [(s.item, s.reason) for s in batch.skipped] == [
        ("Semantic Scholar item #2", "null: Semantic Scholar found no paper for this id")
    ]
    citations = parse_file(_write_json(tmp_path, {"offset": 0, "data": [{"citingPaper": S2_STATE_OF_OA}]}))
    assert _ids(citations.papers) == ["doi:10.7717/peerj.4375"]


def test_semantic_scholar_error_body_is_a_parse_error(tmp_path: Path) -> None:
    path = _write_json(tmp_path, {"error": "Paper with id 10.9999/nothing not found"}, "paper.json")
    with pytest.raises(ParseError, match=r"paper\.json is a saved Semantic Scholar error response.*"
                                         r"Paper with id 10\.9999/nothing not found"):
        parse_file(path)
    limited = {"message": "Too Many Requests. Please wait and try again or apply for a key for higher rate limits.",
               "code": "429"}
    with pytest.raises(ParseError, match=r"Too Many Requests.*\(code 429\)"):
        parse_file(_write_json(tmp_path, limited))


# --- DBLP (hand-written in the search API's shape) ----------------------------------------------

DBLP_SEARCH: dict[str, Any] = {"result": {
    "query": "attention* is* all* you* need*",
    "status": {"@code": "200", "text": "OK"},
    "time": {"@unit": "msecs", "text": "12.34"},
    "hits": {"@total": "3", "@computed": "3", "@sent": "3", "@first": "0", "hit": [
        {"@score": "9", "@id": "3092231", "info": {
            "authors": {"author": [{"@pid": "40/7574", "text": "Ashish Vaswani"},
                                   {"@pid": "48/6303", "text": "Noam Shazeer"},
                                   {"@pid": "154/8413", "text": "Niki Parmar"}]},
            "title": "Attention is All you Need.", "venue": "NIPS", "pages": "5998-6008", "year": "2017",
            "type": "Conference and Workshop Papers", "access": "open", "key": "conf/nips/VaswaniSPUJGKP17",
            "ee": "https://proceedings.neurips.cc/paper/2017/hash/3f5ee243547dee91fbd053c1c4a845aa-Abstract.html",
            "url": "https://dblp.org/rec/conf/nips/VaswaniSPUJGKP17"}, "url": "URL#3092231"},
        {"@score": "9", "@id": "4012735", "info": {
            "authors": {"author": [{"@pid": "40/7574", "text": "Ashish Vaswani"},
                                   {"@pid": "48/6303", "text": "Noam Shazeer"}]},
            "title": "Attention Is All You Need.", "venue": "CoRR", "volume": "abs/1706.03762", "year": "2017",
            "type": "Informal and Other Publications", "access": "open", "key": "journals/corr/VaswaniSPUJGKP17",
            "doi": "10.48550/ARXIV.1706.03762", "ee": "https://doi.org/10.48550/arXiv.1706.03762",
            "url": "https://dblp.org/rec/journals/corr/VaswaniSPUJGKP17"}, "url": "URL#4012735"},
        {"@score": "3", "@id": "5203311", "info": {
            "authors": {"author": {"@pid": "w/WeiWang1", "text": "Wei Wang 0001"}},
            "title": "Attention-based graph summarization.", "venue": "IEEE Trans. Knowl. Data Eng.",
            "volume": "35", "number": "4", "pages": "3310-3323", "year": "2023", "type": "Journal Articles",
            "access": "closed", "key": "journals/tkde/Wang23", "doi": "10.1109/TKDE.2021.3127463",
            "ee": ["https://doi.org/10.1109/TKDE.2021.3127463"], "url": "https://dblp.org/rec/journals/tkde/Wang23"},
         "url": "URL#5203311"},
    ]},
}}


def test_dblp_search_answer(tmp_path: Path) -> None:
    outcome = parse_file(_write_json(tmp_path, DBLP_SEARCH, "dblp.json"))
    assert outcome.format == "dblp" and outcome.skipped == []
    nips, corr, journal = outcome.papers
    assert nips.title == "Attention is All you Need"  # DBLP's closing full stop is not the title's
    assert nips.author_names == ["Ashish Vaswani", "Noam Shazeer", "Niki Parmar"]
    assert (nips.venue, nips.year, nips.pages, nips.type) == ("NIPS", 2017, "5998–6008", "inproceedings")
    assert [(p.source, p.source_id) for p in nips.provenance] == [("dblp", "conf/nips/VaswaniSPUJGKP17")]
    assert corr.id == "arxiv:1706.03762" and corr.type == "preprint" and corr.volume is None
    assert journal.author_names == ["Wei Wang"]  # one author as an object; DBLP's namesake number dropped
    assert (journal.doi, journal.volume, journal.issue) == ("10.1109/tkde.2021.3127463", "35", "4")


def test_dblp_error_and_hits_saved_alone(tmp_path: Path) -> None:
    failed = {"result": {"query": "x", "status": {"@code": "500", "text": "Internal Server Error"}}}
    with pytest.raises(ParseError, match=r"DBLP error response.*500 Internal Server Error"):
        parse_file(_write_json(tmp_path, failed))
    hits = DBLP_SEARCH["result"]["hits"]["hit"]
    assert detect_format(json.dumps(hits)) == "dblp"
    assert len(parse_text(json.dumps(hits), "dblp").papers) == 3


def test_every_format_name_is_a_parser() -> None:
    for fmt in SAVED_FORMATS:
        with pytest.raises(ParseError) as caught:
            parse_text("", fmt, "empty.json")
        assert not re.search(r"Unknown format", caught.value.user_message)
