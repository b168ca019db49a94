"""Inline HTML in a file's text fields is read as the text it formats; other angle brackets stay."""

from __future__ import annotations

import json

import pytest

from retrieval.sources.files.detect import parse_text
from retrieval.sources.markup.inline_html import inline_html_to_text


@pytest.mark.parametrize(("written", "read"), [
    ("From <i>sunblock</i> to <i>softblock:</i> Analyzing neology", "From sunblock to softblock: Analyzing neology"),
    ("CO<sub>2</sub> capture at 10<sup>5</sup> Pa", "CO2 capture at 105 Pa"),
    ('<span class="nocase">BERT</span> for <SCP>Nlp</SCP>', "BERT for Nlp"),
    ("One line<br/>and the next", "One line and the next"),
    ("a < b, <T> generics and x<y>", "a < b, <T> generics and x<y>"),
    ("<script>alert(1)</script>", "<script>alert(1)</script>"),
    ("No markup at all", "No markup at all"),
    ("IEEE Transactions on Knowledge &amp; Data Engineering", "IEEE Transactions on Knowledge & Data Engineering"),
    ("a dimerization parameter β &gt; 0.5 and &lt;90% absorptance", "a dimerization parameter β > 0.5 and <90% absorptance"),
    ("Pages 10&#8211;12 and 13&#x2013;14, &quot;quoted&quot;", "Pages 10–12 and 13–14, \"quoted\""),
    ("&amp;lt; is how one writes &lt;", "&lt; is how one writes <"),  # decoded once
    ("An escaped tag &lt;i&gt;stays&lt;/i&gt;", "An escaped tag <i>stays</i>"),
    ("AT&T, R&D; Q&As; and &unknown; stay", "AT&T, R&D; Q&As; and &unknown; stay"),
    ("non&nbsp;breaking, soft&shy;hyphen", "non breaking, softhyphen"),
])
def test_formatting_tags_go_and_their_text_stays(written: str, read: str) -> None:
    assert inline_html_to_text(written) == read


def test_a_bibtex_title_and_abstract_are_read_without_tags() -> None:
    bib = ("@inproceedings{ryskina2020,\n  title={From <i>sunblock</i> to <i>softblock:</i> Analyzing the correlates "
           "of neology},\n  author={Ryskina, Maria},\n  abstract={We study <b>neologisms</b>.},\n  year={2020}\n}\n")
    [paper] = parse_text(bib, "bibtex").papers
    assert paper.title == "From sunblock to softblock: Analyzing the correlates of neology"
    assert paper.abstract == "We study neologisms."


def test_a_csl_json_title_is_read_without_tags() -> None:
    item = {"id": "x", "type": "article-journal", "title": "Water splitting with TiO<sub>2</sub>",
            "author": [{"family": "Doe", "given": "Jane"}], "issued": {"date-parts": [[2021]]}}
    [paper] = parse_text(json.dumps([item]), "csl-json").papers
    assert paper.title == "Water splitting with TiO2"


def test_character_references_in_bibtex_are_decoded_after_latex() -> None:
    """What a web export writes into BibTeX (``\\&amp;`` in a venue, ``\\&gt;`` in an abstract, as
    in one of the 40 real lists) reads as the characters; a LaTeX ``\\&`` is still an ampersand."""
    bib = ("@article{wu2022,\n  title={Vertical Federated Learning \\& Privacy},\n  author={Wu, Zhaomin},\n"
           "  journal={IEEE Transactions on Knowledge \\&amp; Data Engineering},\n"
           "  publisher={Taylor \\&amp; Francis},\n"
           "  abstract={{Non-trivial as long as the parameter \\&gt; 0.5 and the absorptance is low (\\&lt;90\\%).}},\n"
           "  year={2022}\n}\n")
    [paper] = parse_text(bib, "bibtex").papers
    assert paper.title == "Vertical Federated Learning & Privacy"
    assert paper.venue == "IEEE Transactions on Knowledge & Data Engineering"
    assert paper.publisher == "Taylor & Francis"
    assert paper.abstract == "Non-trivial as long as the parameter > 0.5 and the absorptance is low (<90%)."


def test_ris_and_csl_json_abstracts_venues_and_publishers_are_read_as_text() -> None:
    ris = ("TY  - JOUR\nTI  - Water &amp; ice\nAU  - Doe, Jane\nPY  - 2021\nJO  - Physics &amp; Chemistry\n"
           "PB  - Taylor &amp; Francis\nAB  - We find <i>x</i> &gt; 1.\nER  - \n")
    [paper] = parse_text(ris, "ris").papers
    assert (paper.title, paper.venue, paper.publisher, paper.abstract) == (
        "Water & ice", "Physics & Chemistry", "Taylor & Francis", "We find x > 1.")
    item = {"id": "x", "type": "article-journal", "title": "Water &amp; ice", "author": [{"family": "Doe", "given": "Jane"}],
            "issued": {"date-parts": [[2021]]}, "container-title": "Physics &amp; Chemistry",
            "publisher": "Taylor &amp; Francis", "abstract": "We find <i>x</i> &gt; 1."}
    [paper] = parse_text(json.dumps([item]), "csl-json").papers
    assert (paper.title, paper.venue, paper.publisher, paper.abstract) == (
        "Water & ice", "Physics & Chemistry", "Taylor & Francis", "We find x > 1.")
