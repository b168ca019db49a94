"""``Paper.authors_truncated``: a list the source cut stays marked through export, import and merge."""

from __future__ import annotations

import json

from retrieval.records.merge import dedupe, merge_papers
from retrieval.records.paper import Paper, Provenance
from retrieval.sources.files.bibtex import parse_bibtex
from retrieval.sources.files.bibtex_writer import to_bibtex
from retrieval.sources.files.jsonl import parse_jsonl

CUT = """@article{fletcher2020,
  title = {Cut lists in numerical software},
  author = {Fletcher, R. and B. F. {Smith et al.}},
  journal = {SIAM Review},
  year = {2020}
}
@article{lee2021,
  title = {A complete list},
  author = {Lee, Ann and Kim, Bo},
  year = {2021}
}
@misc{anon2019,
  title = {Only others wrote it},
  author = {others},
  year = {2019}
}
"""


def _view(paper: Paper) -> tuple[object, ...]:
    return paper.title, paper.author_names, paper.authors_truncated, paper.year


def test_bibtex_export_ends_a_cut_list_in_and_others_and_reads_back() -> None:
    papers = parse_bibtex(CUT).papers
    assert [p.authors_truncated for p in papers] == [True, False, True]
    assert papers[0].author_names == ["R. Fletcher", "B. F. Smith"]
    text = to_bibtex(papers)
    assert "author        = {Fletcher, R. and Smith, B. F. and others}" in text
    assert "author        = {Lee, Ann and Kim, Bo}" in text
    assert "author        = {others}" in text
    again = parse_bibtex(text).papers
    assert [_view(p) for p in again] == [_view(p) for p in papers]
    assert [p.id for p in again] == [p.id for p in papers]


def test_jsonl_export_keeps_the_flag() -> None:
    papers = parse_bibtex(CUT).papers
    text = "\n".join(p.model_dump_json(exclude_none=True) for p in papers)  # what `paperbot export` writes
    assert json.loads(text.splitlines()[0])["authors_truncated"] is True
    again = parse_jsonl(text).papers
    assert [_view(p) for p in again] == [_view(p) for p in papers]


def _record(source: str, names: list[str], truncated: bool = False, **extra: object) -> Paper:
    return Paper(title="Scalable solvers for sparse systems", published="2020", authors=[{"name": n} for n in names],
                 authors_truncated=truncated, provenance=[Provenance(source=source)], **extra)


def test_a_fuller_list_from_another_source_wins_and_clears_the_flag() -> None:
    cut = _record("bibtex", ["Ann Lee", "Bo Kim"], truncated=True)
    full = _record("crossref", ["Ann Lee", "Bo Kim", "Cy Park", "Di Wu"], doi="10.1000/x")
    for merged in (merge_papers(cut, full), merge_papers(full, cut)):
        assert merged.author_names == ["Ann Lee", "Bo Kim", "Cy Park", "Di Wu"]
        assert merged.authors_truncated is False


def test_the_flag_follows_the_kept_list() -> None:
    cut = _record("bibtex", ["Ann Lee", "Bo Kim", "Cy Park"], truncated=True)
    shorter = _record("crossref", ["Ann Lee", "Bo Kim"], doi="10.1000/x")
    for merged in (merge_papers(cut, shorter), merge_papers(shorter, cut)):
        assert merged.author_names == ["Ann Lee", "Bo Kim", "Cy Park"]
        assert merged.authors_truncated is True
    same = _record("openalex", ["Ann Lee", "Bo Kim", "Cy Park"])
    # as many names and no marker: that list is no fuller than one known to be cut
    assert merge_papers(cut, same).authors_truncated is True
    assert merge_papers(same, cut).authors_truncated is True
    longer = _record("openalex", ["Ann Lee", "Bo Kim", "Cy Park", "Di Wu"])
    assert merge_papers(cut, longer).authors_truncated is False


def test_dedupe_of_a_listing_keeps_the_flag_of_the_list_it_keeps() -> None:
    cut = _record("bibtex", ["Ann Lee", "Bo Kim"], truncated=True)
    again = _record("ris", ["Ann Lee"])
    (merged,) = dedupe([cut, again])
    assert merged.author_names == ["Ann Lee", "Bo Kim"] and merged.authors_truncated
