"""The file formats paperbot reads: one registry of readers (name, extensions, sniff, parse).

``READERS`` lists each format once, in the order the doors list them (`paperbot ingest --help`,
the ``--format`` choices, ``FILE_FORMATS``):

- ``name``: what ``--format`` and the JSON report call it;
- ``extensions``: file name endings that suggest it (they only break ties: the content decides);
- ``sniff``: its rule on the start of a text (``sniff.py``; the rules exclude each other);
- ``parse``: ``(text, name) -> ParseOutcome``, ``name`` naming the file in messages.

Importing this module loads the standard library only: each ``parse`` imports its reader when
first called, so a door lists the formats without loading the parsers (nor pydantic).
``detect`` recognises and reads files through this table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from retrieval.sources.files import sniff

if TYPE_CHECKING:
    from retrieval.sources.files.base import ParseOutcome


@dataclass(frozen=True)
class Reader:
    """One file format: its name, the extensions that suggest it, its content rule and its parser."""

    name: str
    extensions: tuple[str, ...]
    sniff: Callable[[sniff.Head], bool]
    parse: Callable[[str, str], ParseOutcome]


# The parsers, each imported when first used (see the module docstring).


def _bibtex(text: str, name: str) -> ParseOutcome:
    from retrieval.sources.files.bibtex import parse_bibtex

    return parse_bibtex(text)


def _jsonl(text: str, name: str) -> ParseOutcome:
    from retrieval.sources.files.jsonl import parse_jsonl

    return parse_jsonl(text)


def _csl_json(text: str, name: str) -> ParseOutcome:
    from retrieval.sources.files.csljson import parse_csl_json

    return parse_csl_json(text, name)


def _ris(text: str, name: str) -> ParseOutcome:
    from retrieval.sources.files.ris import parse_ris

    return parse_ris(text)


def _oai_dc(text: str, name: str) -> ParseOutcome:
    from retrieval.sources.files.oai import parse_oai_dc

    return parse_oai_dc(text, name)


def _arxiv_snapshot(text: str, name: str) -> ParseOutcome:
    from retrieval.sources.files.arxiv_snapshot import parse_arxiv_snapshot

    return parse_arxiv_snapshot(text)


def _arxiv_atom(text: str, name: str) -> ParseOutcome:
    from retrieval.sources.files.saved_responses import parse_arxiv_atom

    return parse_arxiv_atom(text, name)


def _openalex(text: str, name: str) -> ParseOutcome:
    from retrieval.sources.files.saved_responses import parse_openalex

    return parse_openalex(text, name)


def _crossref(text: str, name: str) -> ParseOutcome:
    from retrieval.sources.files.saved_responses import parse_crossref

    return parse_crossref(text, name)


def _semantic_scholar(text: str, name: str) -> ParseOutcome:
    from retrieval.sources.files.saved_responses import parse_semantic_scholar

    return parse_semantic_scholar(text, name)


def _dblp(text: str, name: str) -> ParseOutcome:
    from retrieval.sources.files.saved_responses import parse_dblp

    return parse_dblp(text, name)


READERS: tuple[Reader, ...] = (
    Reader("bibtex", (".bib", ".bibtex"), sniff.bibtex, _bibtex),
    Reader("jsonl", (".jsonl", ".ndjson"), sniff.jsonl, _jsonl),
    Reader("csl-json", (".json", ".csl"), sniff.csl_json, _csl_json),
    Reader("ris", (".ris",), sniff.ris, _ris),
    Reader("oai-dc", (".xml",), sniff.oai_dc, _oai_dc),
    Reader("arxiv-snapshot", (), sniff.arxiv_snapshot, _arxiv_snapshot),
    Reader("arxiv-atom", (), sniff.arxiv_atom, _arxiv_atom),
    Reader("openalex", (), sniff.openalex, _openalex),
    Reader("crossref", (), sniff.crossref, _crossref),
    Reader("semantic-scholar", (), sniff.semantic_scholar, _semantic_scholar),
    Reader("dblp", (), sniff.dblp, _dblp),
)
#: The names of the formats, as the doors list them.
FILE_FORMATS: tuple[str, ...] = tuple(reader.name for reader in READERS)
#: Each format's reader, by name.
BY_NAME: dict[str, Reader] = {reader.name: reader for reader in READERS}
