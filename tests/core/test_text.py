"""``retrieval.text``: the folds, tokenisers, stopword lists and the one locked stemmer.

They came together from five modules (``records.paper.fold``, ``records.names.folded``, the
lexical index's ``_fold``, ``tokenize`` and stem cache, the evidence, theme and follow
stemmers and stopword lists), and nothing a user gets may have changed: BM25 tokens and
evidence terms decide which records answer. ``tests/fixtures/text/golden_digests.json`` holds
sha256 digests of what the code *before* the move (commit f9bad29, run from ``git archive``
under /tmp) gave for every title, abstract, author name, venue and category of the 40
``scholars-real`` publication lists, read at run time from ``../shared`` (skipped, saying why,
when absent; never copied into the project), and for a sweep over every code point of planes
0-2. Digests only: the golden file holds no text of the data set.

After a deliberate change of these functions (and a bump of ``index.lexical.TOKENIZER_VERSION``
when BM25 tokens change), ``python -m tests.core.test_text`` rewrites the digests with the
current code.
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import re
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import Stemmer
from bm25s.stopwords import STOPWORDS_EN

import retrieval.text as text
from retrieval.alerts.follows import topic_terms
from retrieval.answers.evidence import question_concepts
from retrieval.index.lexical import document_text
from retrieval.records.paper import Paper
from retrieval.scholars.themes import paper_terms, title_keys
from retrieval.sources.files.bibtex import parse_bibtex
from retrieval.text import (
    BM25_STOPWORDS,
    EVIDENCE_STOPWORDS,
    FOLLOW_STOPWORDS,
    bm25_tokens,
    content_phrases,
    content_terms,
    content_words,
    fold,
    folded,
    follow_terms,
    has_non_latin_letters,
    stem_words,
    strip_accents,
)

ROOT = Path(__file__).resolve().parents[2]
SCHOLARS_REAL = ROOT.parent / "shared" / "datasets" / "scholars-real"
GOLDEN = ROOT / "tests" / "fixtures" / "text" / "golden_digests.json"

# --- digests of every text function's output (the same code made the golden file) -----------


def _theme_terms(paper: Paper) -> list[Any]:
    terms = paper_terms(paper)
    return [sorted(terms.counts.items()), sorted((key, sorted(forms.items())) for key, forms in terms.surfaces.items())]


STRING_PROBES: dict[str, Callable[[str], Any]] = {
    "fold": fold,
    "folded": folded,
    "strip_accents": strip_accents,
    "has_non_latin_letters": has_non_latin_letters,
    "bm25_tokens": bm25_tokens,
    "content_words": content_words,
    "content_terms": lambda value: sorted(content_terms(value)),
    "question_concepts": question_concepts,
    "topic_terms": lambda value: sorted(topic_terms(value)),
}
PAPER_PROBES: dict[str, Callable[[Paper], Any]] = {
    "bm25_document": lambda paper: bm25_tokens(document_text(paper)),
    "theme_terms": _theme_terms,
    "title_keys": lambda paper: sorted(title_keys(paper)),
    "follow_text": lambda paper: sorted(topic_terms(
        " ".join([paper.title, paper.abstract or "", " ".join(paper.categories), paper.venue or ""]))),
}


def _sweep() -> list[str]:
    """Every code point of planes 0-2 (but surrogates), 16 consecutive ones to a string."""
    chunks = []
    for start in range(0x20, 0x30000, 16):
        chars = [chr(code) for code in range(start, start + 16) if not 0xD800 <= code <= 0xDFFF]
        if chars:
            chunks.append("".join(chars))
    return chunks


def _digest(values: Iterable[Any]) -> str:
    hasher = hashlib.sha256()
    for value in values:
        hasher.update(json.dumps(value, ensure_ascii=False).encode("utf-8") + b"\n")
    return hasher.hexdigest()


def _strings_digests(strings: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"strings": len(strings), "input": _digest(strings)}
    for name, probe in STRING_PROBES.items():
        out[name] = _digest(probe(value) for value in strings)
    return out


def _paper_strings(paper: Paper) -> list[str]:
    return [paper.title, *([paper.abstract] if paper.abstract else []), *paper.author_names,
            *([paper.venue] if paper.venue else []), *paper.categories]


def _file_digests(path: Path) -> dict[str, Any]:
    papers = parse_bibtex(path.read_text(encoding="utf-8")).papers
    out = _strings_digests([value for paper in papers for value in _paper_strings(paper)])
    out["papers"] = len(papers)
    for name, probe in PAPER_PROBES.items():
        out[name] = _digest(probe(paper) for paper in papers)
    return out


def _differences(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    return [name for name in expected if actual.get(name) != expected[name]]


# --- nothing changed ------------------------------------------------------------------------


def test_every_code_point_folds_tokenises_and_stems_as_before() -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))["sweep"]
    actual = _strings_digests(_sweep())
    assert actual["input"] == golden["input"]
    assert _differences(golden, actual) == []


def test_every_real_title_abstract_and_name_gives_the_same_tokens_terms_and_keys_as_before() -> None:
    files = sorted((SCHOLARS_REAL / "bib").glob("*.bib"))
    if len(files) != 40:
        pytest.skip(f"the scholars-real data set is not at {SCHOLARS_REAL} (found {len(files)} files of 40)")
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))["files"]
    assert sorted(golden) == [path.name for path in files]
    changed_input, changed_output = [], []
    strings = papers = 0
    for path in files:
        actual = _file_digests(path)
        strings, papers = strings + actual["strings"], papers + actual["papers"]
        if (actual["strings"], actual["papers"], actual["input"]) != tuple(
                golden[path.name][key] for key in ("strings", "papers", "input")):
            changed_input.append(path.name)
        elif differences := _differences(golden[path.name], actual):
            changed_output.append(f"{path.name}: {', '.join(differences)}")
    assert changed_input == [], "the parsers now read other strings from these files: this test cannot judge them"
    assert changed_output == []
    assert (papers, strings) == (1645, 14641)


def test_the_digests_see_a_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks above can fail: one stopword more changes the digests of what it feeds."""
    strings = ["the theory of graph neural networks", "Graph networks on the theory of everything"]
    before = _strings_digests(strings)
    monkeypatch.setattr(text, "EVIDENCE_STOPWORDS", EVIDENCE_STOPWORDS | {"theory"})
    after = _strings_digests(strings)
    assert _differences(before, after) == ["content_words", "content_terms", "question_concepts"]


# --- what each function does ----------------------------------------------------------------


def test_the_three_stopword_lists_differ_and_each_drops_its_words() -> None:
    assert len({BM25_STOPWORDS, EVIDENCE_STOPWORDS, FOLLOW_STOPWORDS}) == 3
    assert bm25_tokens("papers using graphs") == ["paper", "use", "graph"]  # BM25 keeps them
    assert content_words("papers using graphs") == ["graphs"]
    assert follow_terms("papers using graphs") == {"graph"}
    assert follow_terms("5G in C") == {"5g", "c"}  # numbers and one-letter words kept
    assert content_words("5G in C 2024") == ["5g"]


def test_bm25_stopwords_are_bm25s_english_list() -> None:
    """Pinned from bm25s 0.3.16; if an upgrade changes bm25s' list, our tokens stay as built."""
    assert frozenset(STOPWORDS_EN) == BM25_STOPWORDS


def test_folds_differ_by_purpose() -> None:
    assert fold("Café Łódź 深度学习") == "cafe lodz shen du xue xi"
    assert folded("Café Łódź 深度学习") == "cafe lodz shen du xue xi"
    assert strip_accents("Café Łódź 深度学习") == "cafe łodz 深度学习"  # BM25 keeps the script
    assert bm25_tokens("深度学习") == ["深度", "度学", "学习"]


def test_content_phrases_are_runs_between_stopwords() -> None:
    assert content_phrases("Which papers propose quantum error correction with surface codes?") == [
        ("quantum", "error", "correct"), ("surfac", "code")]
    # fold turns punctuation into spaces before the runs are cut: a comma does not end a run
    assert content_phrases("surface codes, quantum error") == [("surfac", "code", "quantum", "error")]
    assert content_phrases("the of and") == []


# --- one stemmer, safe on worker threads ----------------------------------------------------

_ROOTS = ("connect", "nation", "general", "relate", "happy", "run", "argue", "condition", "hope", "sense",
          "retrieve", "compute", "graph", "network", "optimize", "quantum", "correct", "surface", "learn", "model",
          "réseau", "привет", "ärger", "naïve")
_SUFFIXES = ("", "s", "ed", "ing", "ion", "ions", "al", "ally", "ness", "ful", "ly", "er", "ers", "ize", "ization",
             "ational", "iveness", "ement", "ements", "ability")


def test_a_cache_that_starts_over_mid_call_still_stems_every_word(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lexical index's cache once lost the words it already had when it started over (KeyError)."""
    monkeypatch.setattr(text, "_STEM_CACHE_LIMIT", 3)
    text._STEMS.clear()
    try:
        assert stem_words(["graphs", "networks"]) == ["graph", "network"]
        assert stem_words(["graphs", "networks", "learning", "models"]) == ["graph", "network", "learn", "model"]
    finally:
        text._STEMS.clear()


def test_many_threads_stemming_at_once_get_what_one_thread_gets(monkeypatch: pytest.MonkeyPatch) -> None:
    words = [root + suffix for root in _ROOTS for suffix in _SUFFIXES]
    expected = dict(zip(words, Stemmer.Stemmer("english").stemWords(words), strict=True))  # one thread, own stemmer
    # a small cache starts over again and again while the threads race through it
    monkeypatch.setattr(text, "_STEM_CACHE_LIMIT", 50)
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    threads = 16
    barrier = threading.Barrier(threads)

    def work(seed: int) -> dict[str, str]:
        order = random.Random(seed).sample(words, len(words))
        barrier.wait()
        got: dict[str, str] = {}
        for _ in range(5):
            for start in range(0, len(order), 7):
                chunk = order[start : start + 7]
                for word, stem in zip(chunk, stem_words(chunk), strict=True):
                    assert got.setdefault(word, stem) == stem
        return got

    try:
        with ThreadPoolExecutor(threads) as pool:
            results = list(pool.map(work, range(threads)))
    finally:
        sys.setswitchinterval(previous)
        text._STEMS.clear()
    assert all(result == expected for result in results)


def test_tokenisers_on_many_threads_agree_with_one_thread() -> None:
    sentences = [" ".join(random.Random(seed).sample([root + suffix for root in _ROOTS for suffix in _SUFFIXES], 12))
                 for seed in range(200)]
    functions = (bm25_tokens, content_terms, content_phrases, follow_terms)
    text._STEMS.clear()
    alone = [[function(sentence) for function in functions] for sentence in sentences]
    text._STEMS.clear()
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda sentence: [function(sentence) for function in functions], sentences))
    assert together == alone


# --- the bottom layer -----------------------------------------------------------------------


def test_text_imports_nothing_of_ours() -> None:
    tree = ast.parse((ROOT / "retrieval" / "text.py").read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert sorted(name for name in imported if name.split(".")[0] in {"retrieval", "bot", "bench"}) == []


def test_only_text_stems() -> None:
    """One stemmer: no other module of the core makes its own (PyStemmer objects are not thread-safe)."""
    stemming = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "retrieval").rglob("*.py")
                      if re.search(r"^\s*(?:import|from) Stemmer\b", path.read_text(encoding="utf-8"), re.MULTILINE))
    assert stemming == ["retrieval/text.py"]


def _write_golden() -> None:
    files = sorted((SCHOLARS_REAL / "bib").glob("*.bib"))
    if len(files) != 40:
        raise SystemExit(f"the scholars-real data set is not at {SCHOLARS_REAL}")
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    golden["sweep"] = _strings_digests(_sweep())
    golden["files"] = {path.name: _file_digests(path) for path in files}
    GOLDEN.write_text(json.dumps(golden, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    _write_golden()
