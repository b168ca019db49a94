"""Every parser keeps what its source carries: pages, volume, issue, editors, publisher, URL and
the fields with no column (``extra_fields``, keyed by their BibTeX names).

Recorded responses come from ``tests/fixtures`` (always present) and ``/work/shared/fixtures``
(skipped when that tree is absent). Where no recording carries a field (RIS and CSL-JSON
exports with pages, ISBN, series...), a small record is written inline with the facts of a real
paper.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from retrieval.records.paper import Paper
from retrieval.sources.apis.crossref import CrossrefSource
from retrieval.sources.apis.openalex import OpenAlexSource
from retrieval.sources.files.arxiv_snapshot import parse_arxiv_snapshot
from retrieval.sources.files.csljson import parse_csl_json
from retrieval.sources.files.oai import parse_oai_dc
from retrieval.sources.files.ris import parse_ris
from retrieval.sources.providers.arxiv import parse_atom
from retrieval.sources.providers.crossref import parse_crossref_page, parse_crossref_work
from retrieval.sources.providers.openalex import parse_work
from tests.sources.replay import FIXTURES, FakeClock, Replay, body_bytes, load, make_settings

SHARED = Path(__file__).resolve().parents[3] / "shared" / "fixtures"  # ../shared beside the project
FILES = FIXTURES / "files"
NEW_FIELDS = ("pages", "volume", "issue", "editors", "extra_fields")

needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="the shared fixtures (../shared/fixtures beside the project) are not here")


def _body(path: Path | str) -> Any:
    """The body of a recorded ``{url, status_code, body}`` response (relative: under tests/fixtures)."""
    path = Path(path)
    return json.loads((path if path.is_absolute() else FIXTURES / path).read_text(encoding="utf-8"))["body"]


def _crossref_item(path: Path | str, doi: str) -> dict[str, Any]:
    message = _body(path)["message"]
    return next(item for item in message["items"] if item["DOI"] == doi)


def _by_doi(papers: list[Paper], doi: str) -> Paper:
    return next(paper for paper in papers if paper.doi == doi)


def _absent(paper: Paper, *names: str) -> None:
    """The fields are at their defaults and provenance does not claim them."""
    for name in names:
        assert getattr(paper, name) in (None, [], {}), name
        assert name not in paper.provenance[0].fields, name


# --- Crossref -------------------------------------------------------------------------------------


def test_crossref_journal_article_volume_issue_pages_issn_language():
    paper = parse_crossref_work(_body("crossref/test-works__test_works_with_many_ids__1.json"))
    assert paper.doi == "10.1002/jor.1100150407"
    assert (paper.volume, paper.issue, paper.pages) == ("15", "4", "519\u2013527")  # "page": "519-527"
    # the first of "ISSN": ["0736-0266", "1554-527X"]
    assert paper.extra_fields == {"issn": "0736-0266", "language": "en"}
    assert paper.publisher == "Wiley"
    assert paper.url == "https://onlinelibrary.wiley.com/doi/10.1002/jor.1100150407"  # resource.primary.URL
    assert {"pages", "volume", "issue", "extra_fields"} <= set(paper.provenance[0].fields)


def test_crossref_article_number_and_single_page_kept_as_written():
    page = parse_crossref_page(_body("crossref/test-crossref_reader__test_get_random_crossref_id__1.json"))
    article = _by_doi(page.papers, "10.1080/19420889.2017.1395120")
    assert (article.volume, article.issue, article.pages) == ("11", "1", "e1395120")
    one_page = _by_doi(page.papers, "10.1016/0091-3057(84)90081-9")
    assert (one_page.volume, one_page.issue, one_page.pages) == ("20", "6", "994")


def test_crossref_chapter_isbn_and_absent_fields_stay_absent():
    page = parse_crossref_page(_body("crossref/test-cursor__test_cursor_max__1.json"))
    chapter = _by_doi(page.papers, "10.1007/978-1-4302-0386-5_8")
    assert chapter.pages == "261\u2013314"
    # the first of "ISBN": ["9781590597934", "9781430203865"]; no ISSN, no volume
    assert chapter.extra_fields == {"isbn": "9781590597934", "language": "en"}
    _absent(chapter, "volume", "issue", "editors")
    proceedings = _by_doi(page.papers, "10.1145/3027385.3027428")  # only "page" of the new fields
    assert proceedings.pages == "289\u2013298"
    _absent(proceedings, "volume", "issue", "editors", "extra_fields")


def test_crossref_literal_null_volume_is_absent():
    item = _crossref_item("crossref/test-cursor__test_cursor_max__1.json", "10.21326/ksdt.2008..18.018")
    assert item["volume"] == "null"  # as the member deposited it
    paper = parse_crossref_work(item)
    assert (paper.volume, paper.issue, paper.pages) == (None, "18", "199\u2013207")
    assert "volume" not in paper.provenance[0].fields


def test_crossref_editor_becomes_display_name_not_author():
    item = _crossref_item("crossref/test-types__test_types_mixed_ids_works_warn__2.json", "10.54377/157f-be71")
    paper = parse_crossref_work(item)
    assert paper.editors == ["Suzannah Lyons"]
    assert "Suzannah Lyons" not in paper.author_names
    assert "editors" in paper.provenance[0].fields


@needs_shared
def test_crossref_several_editors_in_order():
    body = _body(SHARED / "crossref/habanero_cassettes/test-random_dois__test_random_dois_sample_param__0.json")
    paper = _by_doi(parse_crossref_page(body).papers, "10.1117/12.2214605")
    assert paper.editors == ["Joseph A. Izatt", "James G. Fujimoto", "Valery V. Tuchin"]


def test_crossref_item_with_published_but_no_issued_keeps_its_date():
    # No recorded item lacks ``issued``; this real one loses it here: ``published`` (1997-07)
    # must still date it, not the 2005 ``published-online``.
    item = dict(_body("crossref/test-works__test_works_with_many_ids__1.json")["message"])
    assert item.pop("issued") == {"date-parts": [[1997, 7]]}
    paper = parse_crossref_work(item)
    assert paper.published == "1997-07" and paper.year == 1997
    only_published = {key: value for key, value in item.items()
                      if key not in ("published-online", "published-print")}
    assert parse_crossref_work(only_published).published == "1997-07"


def test_crossref_work_by_doi_replayed_carries_the_new_fields():
    replay = Replay([load("crossref/test-works__test_works_with_many_ids__1.json")])
    clock = FakeClock()
    source = CrossrefSource(make_settings(), replay.client(), clock.sleep, clock=clock)
    fetched = source.work_by_doi("10.1002/jor.1100150407")
    assert fetched is not None
    [paper] = fetched.items
    assert (paper.volume, paper.issue, paper.pages) == ("15", "4", "519\u2013527")


# --- OpenAlex -------------------------------------------------------------------------------------


def test_openalex_biblio_single_page_language_and_issn_l():
    paper = parse_work(json.loads((FIXTURES / "openalex" / "W2741809807.json").read_text(encoding="utf-8")))
    # biblio {"volume": "6", "issue": null, "first_page": "e4375", "last_page": "e4375"}
    assert (paper.volume, paper.pages) == ("6", "e4375")
    _absent(paper, "issue", "editors")
    assert paper.extra_fields == {"language": "en", "issn": "2167-8359"}


def test_openalex_page_range_from_first_and_last_page():
    body = _body("openalex/test_title_search_paper_attributes2___3.json")
    paper = next(parse_work(w) for w in body["results"] if w["id"] == "https://openalex.org/W4396723768")
    assert (paper.volume, paper.issue, paper.pages) == ("6", "5", "525\u2013535")
    assert paper.extra_fields == {"language": "en", "issn": "2522-5839"}


def test_openalex_work_without_biblio_values_has_none():
    body = _body("openalex/test_title_search_paper_attributes2___3.json")
    paper = next(parse_work(w) for w in body["results"] if w["id"] == "https://openalex.org/W4365597205")
    _absent(paper, "pages", "volume", "issue")
    assert paper.extra_fields == {"language": "en"}  # no source ISSN-L recorded


@needs_shared
def test_openalex_work_by_doi_replayed():
    recorded = load(SHARED / "openalex/commonmeta-py_cassettes/test-openalex_reader__test_doi_with_sici__0.json")
    clock = FakeClock()
    source = OpenAlexSource(make_settings(), Replay([recorded]).client(), clock.sleep, clock=clock)
    fetched = source.work_by_doi("10.1890/0012-9658(2006)87[2832:tiopma]2.0.co;2")
    assert fetched is not None
    [paper] = fetched.items
    assert (paper.volume, paper.issue, paper.pages) == ("87", "11", "2832\u20132841")
    assert paper.extra_fields["issn"] == "0012-9658"


# --- CSL-JSON -------------------------------------------------------------------------------------


@needs_shared
def test_csl_json_from_crossref_content_negotiation():
    body = _body(SHARED / "crossref/habanero_cassettes/"
                 "test-content_negotation__test_content_negotiation_citeproc_json__1.json")
    [paper] = parse_csl_json(json.dumps(body)).papers
    assert paper.doi == "10.1126/science.169.3946.635"
    assert (paper.volume, paper.issue, paper.pages) == ("169", "3946", "635\u2013641")
    assert paper.publisher == "American Association for the Advancement of Science (AAAS)"
    assert paper.url == "http://dx.doi.org/10.1126/science.169.3946.635"
    assert paper.extra_fields == {"issn": "0036-8075", "language": "en"}


def test_csl_json_project_fixtures_carry_none_of_the_new_fields():
    for name in ("csl_list.json", "csl_item.json"):
        for paper in parse_csl_json((FILES / name).read_text(encoding="utf-8")).papers:
            _absent(paper, *NEW_FIELDS)


def test_csl_json_book_chapter_fields():
    item = {
        "id": "chapter", "type": "chapter", "title": "Krylov Methods",
        "author": [{"family": "Saad", "given": "Yousef"}],
        "editor": [{"family": "Golub", "given": "Gene H."}, {"literal": "The SIAM Editors"}],
        "container-title": "Iterative Methods", "page": "151--200", "volume": 3, "issue": "2",
        "publisher": "SIAM", "publisher-place": "Philadelphia", "edition": "2", "ISBN": "978-0-89871-534-7",
        "ISSN": ["1234-5678", "8765-4321"], "collection-title": "Other Titles in Applied Mathematics",
        "note": "Reprint of the first edition", "language": "en-US", "URL": "https://example.org/saad",
        "issued": {"date-parts": [[2003]]},
    }
    [paper] = parse_csl_json(json.dumps(item)).papers
    assert (paper.pages, paper.volume, paper.issue) == ("151\u2013200", "3", "2")
    assert paper.editors == ["Gene H. Golub", "The SIAM Editors"]
    assert paper.author_names == ["Yousef Saad"]
    assert (paper.publisher, paper.url) == ("SIAM", "https://example.org/saad")
    assert paper.extra_fields == {
        "issn": "1234-5678", "isbn": "978-0-89871-534-7", "note": "Reprint of the first edition",
        "language": "en-US", "address": "Philadelphia", "edition": "2",
        "series": "Other Titles in Applied Mathematics",
    }


# --- RIS ------------------------------------------------------------------------------------------


def test_ris_a2_is_an_editor():
    outcome = parse_ris((FILES / "ris_full.ris").read_text(encoding="utf-8"))
    dda = next(p for p in outcome.papers if p.title.startswith("Convergence of the discrete dipole"))
    assert dda.editors == ["Some Editor"]  # A2  - Editor, Some
    assert dda.publisher == "Optica Publishing Group" and dda.url == "http://example.org/dda"
    _absent(dda, "pages", "volume", "issue", "extra_fields")


# The example record of the RIS article on Wikipedia (Shannon 1948), with the remaining tags
# filled with that paper's facts.
SHANNON_RIS = """TY  - JOUR
AU  - Shannon, Claude E.
ED  - Editor, The First
A2  - Editor, The First
PY  - 1948
DA  - July
TI  - A Mathematical Theory of Communication
T2  - Bell System Technical Journal
SP  - 379
EP  - 423
VL  - 27
IS  - 3
PB  - American Telephone and Telegraph Co.
SN  - 0005-8580
CY  - New York
LA  - English
N1  - Part I of two
N1  - Continued in the October issue
UR  - https://doi.org/10.1002/j.1538-7305.1948.tb01338.x
ER  - 
TY  - BOOK
TI  - The Mathematical Theory of Communication
AU  - Shannon, Claude E.
AU  - Weaver, Warren
PY  - 1949
PB  - University of Illinois Press
SN  - 978-0-252-72548-7
ET  - 1
T3  - Illini Books
SP  - 117
ER  - 
"""  # noqa: W291 - "ER  - " ends an RIS record: its trailing space is part of the tag


def test_ris_pages_volume_issue_and_extra_fields():
    article, book = parse_ris(SHANNON_RIS).papers
    assert (article.pages, article.volume, article.issue) == ("379\u2013423", "27", "3")
    assert article.editors == ["The First Editor"]  # ED and A2 naming the same person: once
    assert article.publisher == "American Telephone and Telegraph Co."
    assert article.url == "https://doi.org/10.1002/j.1538-7305.1948.tb01338.x"
    assert article.extra_fields == {
        "address": "New York", "language": "English",
        "note": "Part I of two; Continued in the October issue", "issn": "0005-8580",
    }
    assert book.pages == "117"  # SP alone
    assert book.extra_fields == {"edition": "1", "series": "Illini Books", "isbn": "978-0-252-72548-7"}
    _absent(book, "volume", "issue", "editors")


def test_ris_start_page_holding_the_range_and_isbn10():
    text = "TY  - CHAP\nTI  - A chapter\nSP  - 12-15\nSN  - 0 262 03384 4\nER  - \n"
    [paper] = parse_ris(text).papers
    assert paper.pages == "12\u201315"
    assert paper.extra_fields == {"isbn": "0 262 03384 4"}
    two_issns = "TY  - JOUR\nTI  - An article\nSN  - 0005-8580 (Print); 1538-7305 (Online)\nER  - \n"
    assert parse_ris(two_issns).papers[0].extra_fields == {"issn": "0005-8580 (Print); 1538-7305 (Online)"}


# --- arXiv ----------------------------------------------------------------------------------------


def test_arxiv_atom_primary_class_and_comment():
    page = parse_atom((FIXTURES / "arxiv" / "au_del_maestro_AND_ti_checkerboard.xml").read_bytes())
    paper = next(p for p in page.papers if p.arxiv_id == "cond-mat/0603029")
    assert paper.venue == "Phys. Rev. B 74, 024520 (2006)"  # journal_ref stays the venue
    assert paper.extra_fields == {"primaryclass": "cond-mat.str-el", "comment": "10 pages, 11 figures; added reference"}
    _absent(paper, "pages", "volume", "issue", "editors")


def test_arxiv_atom_without_comment_has_primary_class_only():
    recorded = json.loads((FIXTURES / "arxiv" / "id_2104.12255v1_s0_m100_6ae69987ffe1.json").read_text(encoding="utf-8"))
    [paper] = parse_atom(body_bytes(recorded["body"])[0]).papers
    assert paper.extra_fields == {"primaryclass": "cs.CR"}


def test_arxiv_snapshot_primary_class_is_first_category_and_comment_unwrapped():
    papers = parse_arxiv_snapshot((FILES / "arxiv_snapshot_head60.jsonl").read_text(encoding="utf-8")).papers
    first = next(p for p in papers if p.arxiv_id == "0704.0001")
    assert first.venue == "Phys.Rev.D76:013009,2007"
    assert first.extra_fields == {"primaryclass": "hep-ph", "comment": "37 pages, 15 figures; published version"}
    second = next(p for p in papers if p.arxiv_id == "0704.0002")  # "categories": "math.CO cs.CG"
    assert second.extra_fields["primaryclass"] == "math.CO"
    assert all("\n" not in value for p in papers for value in p.extra_fields.values())


def test_oai_dc_comment_without_prefix_and_no_primary_class():
    text = gzip.decompress((FILES / "quant-ph_oai_dc_50.xml.gz").read_bytes()).decode("utf-8")
    papers = parse_oai_dc(text).papers
    paper = next(p for p in papers if p.arxiv_id == "0704.0046")
    assert paper.venue == "J. Math. Phys. 48(2007), 092102."
    assert paper.extra_fields == {"comment": "LATEX file, 11 pages"}  # subjects are names, not codes
    assert all("primaryclass" not in p.extra_fields for p in papers)
