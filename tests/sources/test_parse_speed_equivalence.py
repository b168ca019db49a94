"""The reader's fast paths give what the general code gives.

Each fast path (one regular expression for a plain BibTeX field, the '@'-to-'@' search for
"@article key" lines, clean_text without a regular expression for printable text, caches keyed
by their exact inputs) is checked here against the general code it stands in for, so that a
change to one side that the other does not follow fails a test instead of changing records.
"""

from __future__ import annotations

import random
import re
import sys
import unicodedata
from typing import Any

import pytest

from retrieval.records.paper import Paper, clean_text
from retrieval.sources.files import bibtex, bibtex_names
from retrieval.sources.files.bibtex import parse_bibtex
from retrieval.sources.files.bibtex_names import parse_author_list
from retrieval.sources.markup import latex
from retrieval.sources.markup.latex import latex_to_text

_ATOMS = [
    "a", "Z", "9", " ", "  ", "\n", "\t", ",", "=", "{", "}", '"', "#", "%c\n", "@", "(", ")", "\\", "$",
    "~", "-", "and", " and ", "jan", "2020", "\\'e", "{\\\"o}", "$x^2$", "\n@misc{", "\n  @article(",
    "title", "author", "year", "\xa0", "\u2003", "\x1b[31m", "\r", "é",
]  # fmt: skip


def _random_text(rng: random.Random, size: int) -> str:
    return "".join(rng.choice(_ATOMS) for _ in range(rng.randint(0, size)))


def _random_document(rng: random.Random) -> str:
    entries = []
    for _ in range(rng.randint(1, 4)):
        fields = []
        for _ in range(rng.randint(0, 6)):
            value = rng.choice(["{" + _random_text(rng, 8) + "}", '"' + _random_text(rng, 5) + '"', "2021",
                                "jan", "{a {b} c}", '"a" # {b}', "{x\ny}", "{" + "v" * 40 + "}"])
            name = rng.choice(["title", "author", "year", "note", "Title", "x-y"])
            fields.append(name + rng.choice(["=", " = ", "\t=\t", ""]) + value)
        separator = rng.choice([",", ",\n  ", " , ", ",,", ",%c\n", "\n"])
        opener, closer = rng.choice([("{", "}"), ("(", ")")])
        entries.append(f"@{rng.choice(['article', 'misc', 'string'])}{opener}{rng.choice(['k1', '', 'k 2'])}"
                       f"{separator}{separator.join(fields)}{rng.choice(['', ','])}{closer}")
    return rng.choice(["", "text\n", "@article key, x\n"]) + "\n".join(entries)


Outcome = tuple[list[dict[str, Any]], list[tuple[str, str]], list[tuple[str, str]]]


def _outcome_of(text: str) -> Outcome:
    outcome = parse_bibtex(text)
    return ([paper.model_dump(exclude={"provenance"}) for paper in outcome.papers],
            [(item.item, item.reason) for item in outcome.skipped],
            [(item.item, item.reason) for item in outcome.warnings])


def test_the_one_match_field_reads_as_the_step_by_step_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    documents = [_random_document(rng) for _ in range(600)]
    fast = [_outcome_of(text) for text in documents]
    monkeypatch.setattr(bibtex, "_SIMPLE_FIELD", re.compile(r"(?!)"))  # never matches: every field step by step
    assert [_outcome_of(text) for text in documents] == fast
    assert sum(len(papers) for papers, _, _ in fast) > 100  # the documents do hold papers


def test_lines_without_an_opener_are_found_as_by_a_multiline_pattern() -> None:
    line_start = re.compile(r"^[ \t]*@[ \t]*([A-Za-z]+)[ \t]+(?=[^\s{(])", re.MULTILINE)
    rng = random.Random(11)
    pieces = ["@article key", " \t@misc  k", "x @book k", "@@article a", "\n", "\r\n", " ", "{", "@", "y"]
    for _ in range(2000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        expected = [(m.group(1), m.start(1)) for m in line_start.finditer(text)]
        assert [(m.group(1), m.start(1)) for m in bibtex._no_openers(text)] == expected, repr(text)


def _clean_text_in_full(value: str) -> str:
    """``clean_text`` without its fast paths."""
    if "\x1b" in value:
        value = re.sub(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])", "", value)
    value = "".join(ch for ch in value if ch in "\n\t" or unicodedata.category(ch)[0] != "C")
    return re.sub(r"\s+", " ", value).strip()


def test_clean_text_fast_paths_change_nothing() -> None:
    rng = random.Random(3)
    for _ in range(5000):
        value = _random_text(rng, 10)
        assert clean_text(value) == _clean_text_in_full(value), repr(value)


def test_the_only_printable_whitespace_is_the_space() -> None:
    """``clean_text``'s premise: printable text has no whitespace to collapse but ' '."""
    space = re.compile(r"\s")
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if char.isprintable() and space.match(char):
            assert char == " ", hex(code)


def test_decoding_is_cached_per_tilde_reading() -> None:
    latex._decode.cache_clear()
    assert latex_to_text("a~b") == "a b"
    assert latex_to_text("a~b", tilde_is_space=False) == "a~b"
    assert latex_to_text("a~b") == "a b"
    long = "x~y " * 200  # longer than the cached values: decoded each time, the same way
    assert latex_to_text(long) == ("x y " * 200).strip()
    assert latex_to_text(long, tilde_is_space=False) == long.strip()


def test_author_lists_are_fresh_each_time() -> None:
    names, truncated = parse_author_list("Doe, Jane and Roe, R. and others")
    assert (names, truncated) == (["Jane Doe", "R. Roe"], True)
    names.append("someone")
    assert parse_author_list("Doe, Jane and Roe, R. and others") == (["Jane Doe", "R. Roe"], True)


def test_fingerprint_follows_the_record_as_it_changes() -> None:
    paper = Paper(title="A Title", published="2001", authors=[{"name": "Jane Doe"}])
    before = paper.fingerprint
    assert paper.id == f"hash:{before}"
    paper.title = "Another Title"
    assert paper.fingerprint != before
    paper.title = "A Title"
    assert paper.fingerprint == before
    paper.authors = []
    assert paper.fingerprint != before
    paper.published = None
    assert paper.fingerprint == Paper(title="A Title").fingerprint


def test_reading_is_the_same_with_empty_caches() -> None:
    text = "@article{k, title = {{\\'E}t{\\\"u}de of $x^2$}, author = {M{\\\"u}ller, J. and Doe, Jane}, year = 2020}"
    first = _outcome_of(text)
    for cached in (latex._decode, bibtex_names._author):
        cached.cache_clear()
    assert _outcome_of(text) == first
    assert first[0][0]["title"] == "Étüde of x²"
