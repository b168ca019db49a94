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
