"""The reader registry (``formats.READERS``) and its content rules (``sniff``): one table, rules
that exclude each other, a light import for the doors."""

from __future__ import annotations

import contextlib
import gzip
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval.sources.files.detect import detect_format
from retrieval.sources.files.formats import BY_NAME, FILE_FORMATS, READERS
from retrieval.sources.files.sniff import Head
from tests.sources.replay import load

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"
# Real files of every family: our own fixtures, and recorded API answers saved as files.
SAMPLES = [
    *sorted((FIXTURES / "files").glob("*.*[!d]")),  # not README.md
    *sorted((FIXTURES / "arxiv").glob("*.*[!d]"))[:5],
    *sorted((FIXTURES / "openalex").glob("*.json"))[:5],
    *sorted((FIXTURES / "crossref").glob("*.json"))[:5],
]
TEXTS = [
    "@article{a, title={T}}", "TY  - JOUR\nTI  - T\nER  - \n", "Notes first\nTY  - JOUR\n@misc{a,\n",
    '{"title": "T", "authors": ["A"]}\n{"title": "U"}\n', '[{"title": "T", "issued": {"date-parts": [[2020]]}}]',
    '{"error": "Not found"}', '{"status": "ok", "message-type": "work", "message": {}}',
    '{"result": {"@code": "200", "hits": {}}}', "<feed xmlns='http://www.w3.org/2005/Atom'><id>arxiv.org</id>",
    "", "plain prose", "<html></html>",
]


def _text(path: Path) -> str:
    if path.parent.name in {"arxiv", "openalex", "crossref"} and path.suffix == ".json":  # a recording
        with contextlib.suppress(KeyError, TypeError, ValueError):
            return load(path).body.decode("utf-8")  # what the API answered, as a user would save it
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8-sig")


def test_one_entry_per_format_and_the_listed_names_come_from_it() -> None:
    assert tuple(reader.name for reader in READERS) == FILE_FORMATS
    assert len(set(FILE_FORMATS)) == len(FILE_FORMATS) and set(BY_NAME) == set(FILE_FORMATS)
    extensions = [extension for reader in READERS for extension in reader.extensions]
    assert len(extensions) == len(set(extensions))  # an extension suggests one format


@pytest.mark.parametrize("text", [*map(_text, SAMPLES), *TEXTS], ids=[*(p.name for p in SAMPLES), *map(repr, TEXTS)])
@pytest.mark.parametrize("filename", [None, "x.bib", "x.jsonl", "x.json", "x.txt"])
def test_the_rules_exclude_each_other_so_their_order_does_not_matter(text: str, filename: str | None) -> None:
    suffix = Path(filename).suffix if filename else None
    hint = next((reader.name for reader in READERS if suffix in reader.extensions), None)
    met = [reader.name for reader in READERS if reader.sniff(Head.of(text, hint))]
    assert len(met) <= 1, met
    if met:
        assert detect_format(text, filename) == met[0]


def test_listing_the_formats_loads_no_parser() -> None:
    code = ("import sys; from retrieval.sources.files.formats import FILE_FORMATS; "
            "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'httpx', 'retrieval.sources.files.b'))))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert run.stdout.strip() == "[]"
