"""What the record store keeps of a ``Paper``, and how a stored record is read back: pure functions.

A record is stored as its JSON (``Paper.model_dump_json``) beside lookup columns computed from
it (``paper_row``: ids, fingerprint, title key, year, venue key, hashes), its title-variant keys
(``variant_keys``: the ``title_variants`` rows) and its written author names filed under each
family name they may carry (``author_name_rows``: the ``author_names`` rows), and the entries read
from a file that name it (``file_entry_rows``: the ``file_entries`` rows). The record store
(``storage.records``) and the import of a records file made before the database
(``storage.legacy_records``) compute them here, so both file a record the same way.

``decode`` rebuilds a stored record without re-running its validators, and ``record_text`` reads
what a text index needs without building the ``Paper`` at all.
"""

from __future__ import annotations

import json
from functools import cache, lru_cache
from typing import Any, NamedTuple

from pydantic import BaseModel

from retrieval.records.merge import title_variants
from retrieval.records.names import author_key, filing_families
from retrieval.records.paper import Author, FamilyPart, Paper, Provenance, title_key
from retrieval.text import folded


@lru_cache(maxsize=4096)
def variant_keys(title: str) -> tuple[str, ...]:
    """Title-variant keys worth looking up: two words at least (one word identifies nothing).

    Cached (a few recent titles): an ingest looks each title up (``find_matches``), then
    writes the record under the same title.
    """
    return tuple(key for key in dict.fromkeys(title_variants(title)) if len(key.split()) >= 2)


@lru_cache(maxsize=65536)
def _filing(name: str) -> tuple[str, tuple[str, ...]] | None:
    """(author key, filing families) of one written name; None for a name without a key.

    Cached: the papers of a publication list all repeat their scholar's name.
    """
    key = author_key(name)
    return (key, tuple(filing_families(name))) if key else None


def author_name_rows(paper: Paper, paper_id: str | None = None) -> list[tuple[str, str, str, str]]:
    """``author_names`` rows of one record: (paper id, family, written name, author key), each once.

    ``paper_id``: the record's id when the caller has it (``Paper.id`` of a ``hash:`` record
    hashes its title anew on every read).
    """
    if paper_id is None:
        paper_id = paper.id
    rows = {}
    for author in paper.authors:
        filed = _filing(author.name)
        if filed is not None:
            key, families = filed
            for family in families:
                rows[(family, author.name)] = key
    return [(paper_id, family, name, key) for (family, name), key in rows.items()]


def file_entry_keys(paper: Paper) -> list[tuple[str, str, str]]:
    """(file, source, key) of each of ``paper``'s provenance entries that names the file it was
    read from (``Provenance.file``), each once."""
    return list(dict.fromkeys((entry.file, entry.source, entry.source_id) for entry in paper.provenance
                              if entry.file and entry.source_id))


def file_entry_rows(paper: Paper, paper_id: str) -> list[tuple[str, str, str, str]]:
    """``file_entries`` rows of one record: (paper id, source, key, file) of each ``file_entry_keys``."""
    return [(paper_id, source, key, file) for file, source, key in file_entry_keys(paper)]


def venue_key(paper: Paper) -> str | None:
    """The folded venue name (what venue filters compare), or None."""
    return folded(paper.venue) if paper.venue else None  # cached fold: a list repeats its venues


def paper_row(paper_id: str, paper: Paper, stamp: str) -> dict[str, Any]:
    """The ``papers`` row of one record: its lookup columns and its JSON, written at ``stamp``."""
    return {"id": paper_id, "doi": paper.doi, "arxiv_id": paper.arxiv_id, "openalex_id": paper.openalex_id,
            "fingerprint": paper.fingerprint, "title_key": title_key(paper.title), "year": paper.year,
            "venue_key": venue_key(paper), "content_hash": paper.content_hash,
            "embedding_hash": paper.embedding_hash, "updated_at": stamp, "record": paper.model_dump_json()}


def decode(record: str) -> Paper:
    """Rebuild a stored ``Paper`` without re-running its validators.

    Records were validated before they were stored; validating again (text cleaning walks every
    character) would be paid by every search for each of its hits and by every BM25 rebuild
    (docs/performance.md, "The expert ranking's arithmetic and record decoding"). Unknown keys
    (an older schema) are dropped; anything unexpected falls back to full validation.
    """
    try:
        data = json.loads(record)
        fields = _known(Paper, data)
        fields["authors"] = [Author.model_construct(**_known(Author, a)) for a in fields.get("authors") or []]
        fields["provenance"] = [Provenance.model_construct(**_known(Provenance, p)) for p in fields.get("provenance") or []]
        fields["editor_families"] = {name: FamilyPart.model_construct(**_known(FamilyPart, part))
                                     for name, part in (fields.get("editor_families") or {}).items()}
        return Paper.model_construct(**fields)
    except (TypeError, ValueError, AttributeError):
        return Paper.model_validate_json(record)


def _known(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    names = _field_names(model)
    return {key: value for key, value in data.items() if key in names}


@cache
def _field_names(model: type[BaseModel]) -> frozenset[str]:
    """``model``'s field names, read once: pydantic's ``model_fields`` is a class property, a call
    on every access, and ``decode`` asks once per key of every record a search reads."""
    return frozenset(model.model_fields)


class RecordText(NamedTuple):
    """The fields of a stored record that a text index reads (``RecordStore.iter_texts``)."""

    id: str
    year: int | None
    title: str
    abstract: str | None
    author_names: list[str]
    venue: str | None


def record_text(paper_id: str, year: int | None, record: str) -> RecordText:
    """``RecordText`` of one stored record: its fields as ``decode`` would give them, read
    from the JSON without building the ``Paper`` and its ``Author`` models.

    A record of another shape (what ``decode`` validates instead) goes through ``decode``.
    """
    try:
        data = json.loads(record)
        names = [author["name"] for author in data.get("authors") or []]
        return RecordText(paper_id, year, data["title"], data.get("abstract"), names, data.get("venue"))
    except (TypeError, ValueError, AttributeError, KeyError):
        paper = decode(record)
        return RecordText(paper_id, year, paper.title, paper.abstract, paper.author_names, paper.venue)
