"""``text.fold`` keeps every script: non-Latin titles get ids of their own, Latin ones keep theirs.

Before, ``fold`` kept only ASCII: two Chinese (or Cyrillic) titles of one year and first author
folded to the same empty key, hence the same ``hash:`` id, and an ingest merged them into one
record. Now non-Latin letters are transliterated (``anyascii``); Latin text must fold exactly as
before, or every stored ``hash:`` id of a Latin title would change. ``_old_fold`` below is the
previous implementation, kept here as the reference.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import re
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

import retrieval.text as text_module
from retrieval.index.paper_index import PaperIndex
from retrieval.ingest.pipeline import ingest_papers
from retrieval.records.paper import Paper
from retrieval.sources.files.detect import parse_file
from retrieval.text import LATIN_LETTERS, fold, has_non_latin_letters
from tests.index.conftest import HashEncoder, make_settings

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
SCHOLARS_REAL = ROOT.parent / "shared" / "datasets" / "scholars-real"


def _old_fold(value: str) -> str:
    """``text.fold`` as it was: ASCII letters after decomposition, everything else a separator."""
    decomposed = unicodedata.normalize("NFKD", value.translate(LATIN_LETTERS))
    ascii_only = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return re.sub(r"[^a-z0-9]+", " ", ascii_only.lower()).strip()


def _non_latin(value: str) -> bool:
    """Independent of the code under test: a letter or digit of a script other than Latin that
    the old fold dropped."""
    for char in value:
        if char.isascii() or unicodedata.category(char) not in {"Lu", "Ll", "Lt", "Lm", "Lo", "Nd"}:
            continue
        name = unicodedata.name(char, "")
        if not name.startswith(("LATIN ", "MODIFIER LETTER ", "FEMININE", "MASCULINE")) and not _old_fold(char):
            return True
    return False


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("深度学习的图神经网络", "shen du xue xi de tu shen jing wang luo"),
        ("Квантовая механика", "kvantovaya mekhanika"),
        ("Ελληνικά", "ellinika"),
        ("α-synuclein aggregation", "a synuclein aggregation"),
        ("ひらがな", "hiragana"),
        ("한국어 처리", "hangugeo cheoli"),
        ("مُحَمَّد", "muhamad"),
        ("हिन्दी", "hindi"),
        ("Graph 神经网络 (GNN)", "graph shen jing wang luo gnn"),
        ("张伟", "zhang wei"),
    ],
)
def test_other_scripts_are_transliterated(text: str, folded: str) -> None:
    assert fold(text) == folded
    assert has_non_latin_letters(text)


@pytest.mark.parametrize(
    "text",
    ["Schrödinger equation", "Łukasz Søren Martı́n", "Straße–Café ça naïve", "Hawaiʻi", "© 2020 × 3° ½",
     "ħ and ŋ", "ﬁnite ℓ-adic", "Jiří Kučera", "ASCII only: Deep Learning, 2nd ed."],
)
def test_latin_text_folds_exactly_as_before(text: str) -> None:
    assert fold(text) == _old_fold(text)
    assert not has_non_latin_letters(text)


def test_every_character_outside_other_scripts_folds_as_before() -> None:
    checked = 0
    for code in range(0x80, 0x30000):
        if 0xD800 <= code < 0xE000:
            continue
        char = chr(code)
        sample = f"a{char}b {char}"
        if _non_latin(sample):
            continue
        checked += 1
        assert fold(sample) == _old_fold(sample), (hex(code), char)
    assert checked > 20_000


def test_latin_text_never_reaches_the_transliterator(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(text: str) -> str:
        raise AssertionError(f"anyascii called for {text!r}")

    monkeypatch.setattr(text_module, "anyascii", refuse)
    text_module._foreign.cache_clear()
    try:
        assert fold("Déjà vu: Łódź, Ørsted & Œuvre — ßig") == "deja vu lodz orsted oeuvre ssig"
        assert fold("plain ASCII") == "plain ascii"
    finally:
        text_module._foreign.cache_clear()


# --- every title and name the project's fixtures and the real lists hold --------------------


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _fixture_texts(path: Path) -> Iterator[str]:
    """Titles, names and venues of a fixture file: parsed where paperbot reads the format, and
    every JSON string / XML text (API responses) besides."""
    try:
        for paper in parse_file(path).papers:
            yield paper.title
            yield from paper.author_names
            if paper.venue:
                yield paper.venue
    except Exception:
        pass
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    text = raw.decode("utf-8", errors="replace")
    if path.suffix in {".json", ".jsonl"}:
        for line in [text] if path.suffix == ".json" else text.splitlines():
            try:
                yield from _strings(json.loads(line))
            except ValueError:
                continue
    elif ".xml" in path.suffixes:
        with contextlib.suppress(ET.ParseError):
            yield from (node.text for node in ET.fromstring(raw).iter() if node.text and node.text.strip())


def _check_unchanged(texts: Iterator[str]) -> tuple[int, int]:
    latin = other = 0
    for text in texts:
        if _non_latin(text):
            other += 1
            assert fold(text) != _old_fold(text) or not text.strip(), text
            continue
        latin += 1
        assert fold(text) == _old_fold(text), text
    return latin, other


def test_every_fixture_title_and_name_folds_as_before_unless_it_has_other_scripts() -> None:
    files = sorted(path for path in FIXTURES.rglob("*") if path.is_file() and path.suffix != ".md")
    latin, other = _check_unchanged(text for path in files for text in _fixture_texts(path))
    assert latin > 10_000 and other > 0


def test_every_real_title_and_name_folds_as_before_unless_it_has_other_scripts() -> None:
    files = sorted((SCHOLARS_REAL / "bib").glob("*.bib"))
    if len(files) != 40:
        pytest.skip(f"the scholars-real data set is not at {SCHOLARS_REAL} (found {len(files)} files of 40)")
    owners = json.loads((SCHOLARS_REAL / "owners.json").read_text(encoding="utf-8"))
    names = [variant for owner in owners for variant in [owner["name"], *owner["name_variants"], *owner["titles"]]]
    latin, other = _check_unchanged(iter([*names, *(text for path in files for text in _fixture_texts(path))]))
    assert latin > 5_000 and other > 0  # "韩放达" is one of the written names


# --- ids and ingest ---------------------------------------------------------------------------


def _paper(title: str, first_author: str = "Wang Wei") -> Paper:
    return Paper(title=title, published="2021", authors=[{"name": first_author}], abstract=f"About {title}.")


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("深度学习在医学图像中的应用", "图神经网络的理论研究"),
        ("Квантовая механика твёрдого тела", "Теория вероятностей и статистика"),
    ],
)
def test_two_titles_of_one_year_get_two_ids_and_both_survive_an_ingest(tmp_path: Path, first: str,
                                                                        second: str) -> None:
    a, b = _paper(first), _paper(second)
    assert _old_fold(a.title) == _old_fold(b.title) == ""  # the old fold gave both one key
    assert a.id != b.id and a.id.startswith("hash:")
    index = PaperIndex.open(make_settings(tmp_path / "data"), HashEncoder())
    try:
        report = ingest_papers(index, [a, b])
        assert sorted(report.added) == sorted([a.id, b.id]) and report.merged_duplicates == 0
        assert {p.title for p in index.iter_papers()} == {first, second}
        again = ingest_papers(index, [b, a])  # a re-ingest merges each with itself only
        assert sorted(again.unchanged) == sorted([a.id, b.id]) and index.count() == 2
        assert index.check_consistency().ok
    finally:
        index.close()
