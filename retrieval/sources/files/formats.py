"""The names of the file formats paperbot reads, in the order detection tries them.

The standard library only, and nothing else of the core: a door lists them (`paperbot ingest
--help`, ``--format`` choices) without importing the parsers (``retrieval.sources.files.detect``
holds one parser per name; ``tests/sources`` checks they agree).
"""

from __future__ import annotations

FILE_FORMATS: tuple[str, ...] = (
    "bibtex", "jsonl", "csl-json", "ris", "oai-dc", "arxiv-snapshot",
    "arxiv-atom", "openalex", "crossref", "semantic-scholar", "dblp",
)  # fmt: skip
