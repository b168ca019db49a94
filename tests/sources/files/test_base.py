"""build_paper: the one place raw fields become a validated Paper with provenance."""

from __future__ import annotations

from datetime import date

import pytest

from retrieval.results import SkippedItem
from retrieval.sources.files.base import ItemRejected, ParseOutcome, build_paper, check_field_sizes


def test_build_paper_stamps_provenance_with_supplied_fields() -> None:
    outcome = ParseOutcome(format="bibtex")
    paper = build_paper(
        {"title": " A  title ", "doi": "doi:10.1000/X", "venue": "", "categories": []},
        source="bibtex",
        source_id="key1",
        item="entry 'key1' (line 1)",
        outcome=outcome,
    )
    assert paper is not None and outcome.papers == [paper]
    assert (paper.title, paper.doi) == ("A title", "10.1000/x")
    provenance = paper.provenance[0]
    assert (provenance.source, provenance.source_id) == ("bibtex", "key1")
    assert provenance.fields == ["title", "doi"]
    assert provenance.retrieved == date.today().isoformat()


def test_bad_optional_values_are_dropped_not_the_paper() -> None:
    outcome = ParseOutcome(format="ris")
    paper = build_paper(
        {
            "title": "T",
            "authors": [{"name": "Ada"}, {"name": "\x00\x01"}, {"name": "Grace"}],
            "published": "3020",
        },
        source="ris",
        source_id=None,
        item="record 1",
        outcome=outcome,
    )
    assert paper is not None
    assert (paper.author_names, paper.published) == (["Ada", "Grace"], None)
    assert outcome.warnings == [
        SkippedItem(
            "record 1",
            "dropped authors.1.name: author name is empty; "
            "published: publication year 3020 is out of range",
        )
    ]


@pytest.mark.parametrize("title", [None, "", "   ", "\x00\x07"])
def test_no_usable_title_skips_the_item(title: str | None) -> None:
    outcome = ParseOutcome(format="jsonl")
    assert (
        build_paper(
            {"title": title}, source="jsonl", source_id=None, item="line 3", outcome=outcome
        )
        is None
    )
    assert outcome.papers == []
    assert outcome.skipped == [SkippedItem("line 3", "no title")]


def test_check_field_sizes_names_the_field() -> None:
    check_field_sizes({"title": "x" * 100_000, "authors": ["a"] * 10})
    with pytest.raises(ItemRejected, match="field 'authors' exceeds 100000 characters"):
        check_field_sizes({"authors": ["x" * 60_000, "y" * 60_000]})
