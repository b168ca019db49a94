"""What users' BibTeX files carry survives: hidden ids become links, every field comes back out.

The entries are shaped like the real ones the issue names (Google Scholar's "arXiv preprint"
journals, al-folio's ``arxiv``/``html``/``pdf`` fields, DBLP's CoRR volumes, a ``doi`` written
"DOI 10...", a key with a space, a key used twice) and the round trip is checked on whole
records, not on a few fields.
"""

from __future__ import annotations

import json

import pytest

from retrieval.ingest.pipeline import _fold_equal_ids
from retrieval.records.merge import titles_conflict
from retrieval.records.paper import Paper
from retrieval.results import SkippedItem
from retrieval.sources.files.bibtex import PROVENANCE_FIELD, RECORD_FIELD, parse_bibtex
from retrieval.sources.files.bibtex_writer import citation_keys, to_bibtex, user_key


def _one(text: str) -> Paper:
    outcome = parse_bibtex(text)
    assert len(outcome.papers) == 1, outcome.skipped
    return outcome.papers[0]


@pytest.mark.parametrize(
    ("fields", "arxiv_id"),
    [
        ("journal = {Ar{X}iv:2303.08774}", "2303.08774"),
        ("journal = {arXiv preprint arXiv:2303.08774}", "2303.08774"),
        ("journal = {CoRR}, volume = {abs/1606.06565}", "1606.06565"),
        ("journal = {CVPR}, volume = {abs/2111.13204}", "2111.13204"),
        ("arxiv = {2410.20286}", "2410.20286"),
        ("eid = {arXiv:2011.05444}", "2011.05444"),
        ("note = {seearXiv:gr-qc/0203085}", "gr-qc/0203085"),
        ("pdf = {https://arxiv.org/pdf/2509.21054}", "2509.21054"),
        ("eprint = {2203.04952}, eprinttype = {arXiv}", "2203.04952"),
    ],
)
def test_arxiv_ids_are_read_wherever_files_put_them(fields: str, arxiv_id: str) -> None:
    paper = _one(f"@article{{k, title = {{A study of things}}, author = {{Ada Lovelace}}, year = 2023, {fields}}}")
    assert paper.arxiv_id == arxiv_id
    assert paper.id == f"arxiv:{arxiv_id}" and paper.link == f"https://arxiv.org/abs/{arxiv_id}"


@pytest.mark.parametrize(
    ("fields", "doi"),
    [
        ("doi = {DOI 10.1109/WAINA.2013.149}", "10.1109/waina.2013.149"),
        ("doi = {doi.org/10.1109/CCNC51644.2023.10060415}", "10.1109/ccnc51644.2023.10060415"),
        ("html = {https://doi.org/10.1145/3696630.3728555}", "10.1145/3696630.3728555"),
        ("website = {https://dl.acm.org/doi/abs/10.1145/3696410.3714872}", "10.1145/3696410.3714872"),
        ("note = {doi: 10.1017/S0962492904000212}", "10.1017/s0962492904000212"),
    ],
)
def test_dois_are_read_from_links_and_labelled_notes(fields: str, doi: str) -> None:
    paper = _one(f"@article{{k, title = {{A study of things}}, author = {{Ada Lovelace}}, year = 2023, {fields}}}")
    assert paper.doi == doi


def test_a_doi_in_unlabelled_prose_is_not_taken_for_the_papers_own() -> None:
    paper = _one("@article{k, title = {Reply}, author = {A B}, note = {Comment on 10.1000/other.paper}}")
    assert paper.doi is None


@pytest.mark.parametrize(
    ("fields", "url"),
    [
        ("url = {www.clawpack.org}", "http://www.clawpack.org"),
        ("html = {https://aclanthology.org/2021.x-1.6}", "https://aclanthology.org/2021.x-1.6"),
        ("arxiv = {https://ojs.aaai.org/index.php/AAAI/article/view/40480}",
         "https://ojs.aaai.org/index.php/AAAI/article/view/40480"),
        ("adsurl = {https://ui.adsabs.harvard.edu/abs/2021MNRAS.505.2447P}",
         "https://ui.adsabs.harvard.edu/abs/2021MNRAS.505.2447P"),
        ("doi = {https://dialnet.unirioja.es/servlet/articulo?codigo=1}",
         "https://dialnet.unirioja.es/servlet/articulo?codigo=1"),
        ("howpublished = {\\url{http://www.mcs.anl.gov/petsc}}", "http://www.mcs.anl.gov/petsc"),
    ],
)
def test_urls_are_read_from_every_link_field(fields: str, url: str) -> None:
    paper = _one(f"@misc{{k, title = {{A tool}}, author = {{Ada Lovelace}}, {fields}}}")
    assert paper.url == url and paper.link is not None


def test_a_relative_pdf_or_a_code_repository_is_no_link_to_the_paper() -> None:
    paper = _one("@article{k, title = {T}, author = {A B}, pdf = {paper.pdf}, code = {https://github.com/a/b}}")
    assert paper.link is None
    assert paper.extra_fields == {"pdf": "paper.pdf", "code": "https://github.com/a/b"}


def test_every_field_is_stored_and_written_back() -> None:
    text = r"""@inproceedings{Abadi.Barham.Chen.ea.2016,
  title = {{TensorFlow}: A System for Large-Scale Machine Learning},
  author = {Abadi, Mart{\'\i}n and Barham, Paul and others},
  editor = {Keeton, Kimberly and Roscoe, Timothy},
  booktitle = {12th {USENIX} Symposium on Operating Systems Design and Implementation ({OSDI} 16)},
  pages = {265--283},
  volume = {1},
  number = {2},
  year = {2016},
  month = nov,
  address = {Savannah, GA},
  isbn = {978-1-931971-33-1},
  note = {See also \url{https://www.tensorflow.org/} 50\% faster},
  selected = {true},
  abbr = {OSDI},
  publisher = {{USENIX} Association}
}
"""
    paper = _one(text)
    assert (paper.pages, paper.volume, paper.issue, paper.published) == ("265–283", "1", "2", "2016-11")
    assert paper.editors == ["Kimberly Keeton", "Timothy Roscoe"] and paper.authors_truncated
    assert paper.extra_fields == {
        "address": "Savannah, GA", "isbn": "978-1-931971-33-1",
        "note": r"See also \url{https://www.tensorflow.org/} 50\% faster", "selected": "true", "abbr": "OSDI",
    }
    exported = to_bibtex([paper])
    assert exported.startswith("@inproceedings{Abadi.Barham.Chen.ea.2016,")  # the user's key, not abadi2016tensorflow
    assert "and others}" in exported and "al., et" not in exported
    assert "pages         = {265--283}" in exported and "month         = nov" in exported
    assert r"note          = {See also \url{https://www.tensorflow.org/} 50\% faster}" in exported
    again = _one(exported)
    assert again.model_dump() == paper.model_dump()  # provenance included: it is this same entry
    assert to_bibtex([again]) == exported


def test_provenance_and_what_bibtex_cannot_hold_travel_in_custom_fields() -> None:
    paper = Paper.model_validate({
        "title": "Deep learning for graphs", "type": "journal-article", "open_access": True,
        "citation_count": 12, "openalex_id": "W2741809807", "doi": "10.1000/xyz",
        "authors": [{"name": "Ada Lovelace", "orcid": "0000-0002-1825-0097", "affiliations": ["Analytical Engines"]},
                    {"name": "Charles Babbage"}],
        "provenance": [{"source": "crossref", "source_id": "10.1000/xyz", "fields": ["title"], "retrieved": "2026-01-02"},
                       {"source": "bibtex", "source_id": "lovelace{}%key", "retrieved": "2026-01-03"}],
    })
    exported = to_bibtex([paper])
    assert exported.startswith("@article{lovelacedeep,")  # "lovelace{}%key" cannot be cited: generated
    assert PROVENANCE_FIELD in exported and RECORD_FIELD in exported
    again = _one(exported)
    assert again.model_dump(exclude={"provenance"}) == paper.model_dump(exclude={"provenance"})
    assert again.provenance[:2] == paper.provenance  # braces and "%" in a source id survive
    assert again.authors[0].orcid == "0000-0002-1825-0097"


def test_a_hand_edited_provenance_field_is_ignored_with_a_warning() -> None:
    outcome = parse_bibtex("@misc{k, title = {T}, paperbot-provenance = {not json}, paperbot-record = {[1]}}")
    assert len(outcome.papers) == 1 and [p.source for p in outcome.papers[0].provenance] == ["bibtex"]
    assert {w.reason for w in outcome.warnings} == {
        "field 'paperbot-provenance' is not a JSON list of sources; ignored",
        "field 'paperbot-record' is not a JSON object; ignored",
    }


def test_an_unbalanced_extra_value_from_elsewhere_is_escaped_not_written_raw() -> None:
    paper = Paper.model_validate({"title": "T", "extra_fields": {"note": "a } b\n@article{x,"}})
    exported = to_bibtex([paper])
    again = parse_bibtex(exported)
    assert len(again.papers) == 1 and again.skipped == []


def test_a_key_with_a_space_is_read_and_gets_a_citable_key_on_export() -> None:
    outcome = parse_bibtex("@article{ZHAO Changying:108, title = {Light in crystals}, author = {Zhao, C}, year = 2020}")
    paper = outcome.papers[0]
    assert paper.citation_keys == ["ZHAO Changying:108"] and user_key(paper) is None
    assert "LaTeX cannot cite" in outcome.warnings[0].reason
    assert citation_keys([paper]) == ["zhao2020light"]


def test_a_repeated_key_stays_with_the_first_entry_as_bibtex_has_it() -> None:
    text = """@inproceedings{UMoE, title = {Zero-Shot IoT Sensing}, author = {Qun Song}, year = 2024}
@inproceedings{UMoE, title = {Unified Mixture of Experts}, author = {Qun Song}, year = 2025}"""
    outcome = parse_bibtex(text)
    first, second = outcome.papers
    assert "repeats the key of the entry at line 1" in outcome.warnings[0].reason
    # whatever the ids, the entry LaTeX cites as UMoE keeps the key
    assert citation_keys([second, first]) == ["song2025unified", "UMoE"]


def test_generated_keys_do_not_depend_on_export_order() -> None:
    papers = [Paper.model_validate({"title": f"Deep nets {n}", "authors": [{"name": "Ann Lee"}], "published": "2020"})
              for n in ("one", "two", "three")]
    forward = dict(zip((p.id for p in papers), citation_keys(papers), strict=True))
    backward = dict(zip((p.id for p in reversed(papers)), citation_keys(list(reversed(papers))), strict=True))
    assert forward == backward and sorted(forward.values()) == ["lee2020deepa", "lee2020deepb", "lee2020deepc"]


def test_two_papers_a_file_gave_one_arxiv_id_stay_two_records() -> None:
    text = """@article{dai2021elastic, title = {Elastic CRFs for Open-Ontology Slot Filling}, author = {Dai, Yinpei},
  year = {2021}, arxiv = {1811.01331}}
@inproceedings{zhang2020improved, title = {Improved Learning of Word Embeddings with Word Definitions},
  author = {Zhang, Yichi}, year = {2020}, booktitle = {INTERSPEECH}, arxiv = {1811.01331}}"""
    papers = parse_bibtex(text).papers
    assert titles_conflict(*papers)
    warnings: list[SkippedItem] = []
    kept = _fold_equal_ids(papers, warnings)
    assert [p.title[:7] for p in kept] == ["Elastic", "Improve"]
    assert kept[0].id == "arxiv:1811.01331" and kept[1].id.startswith("hash:") and kept[1].venue == "INTERSPEECH"
    assert "has the arxiv 1811.01331 of another paper" in warnings[0].reason


def test_a_renamed_preprint_still_merges_on_its_shared_id() -> None:
    a = Paper(title="ChemCrow: Augmenting large-language models with chemistry tools", arxiv_id="2304.05376")
    b = Paper(title="Augmenting large language models with chemistry tools", arxiv_id="2304.05376")
    assert not titles_conflict(a, b)


def test_the_export_is_valid_json_in_its_custom_fields() -> None:
    paper = Paper.model_validate({"title": "T", "provenance": [{"source": "x", "source_id": "}{"}]})
    exported = to_bibtex([paper])
    line = next(line for line in exported.splitlines() if PROVENANCE_FIELD in line)
    value = line.split("= ", 1)[1]
    assert json.loads(value[1:-1]) == [{"source": "x", "source_id": "}{", "fields": []}]


def test_an_entry_without_its_opening_brace_is_reported_not_lost_silently() -> None:
    outcome = parse_bibtex("@article smith2020, title = {Lost}, year = 2020}\n\n@misc{ok, title = {Kept}}\n")
    assert [p.title for p in outcome.papers] == ["Kept"]
    assert [(s.item, s.reason) for s in outcome.skipped] == [
        ("entry at line 1", "no '{' after @article: the entry is not read (write @article{key, ...})")]
