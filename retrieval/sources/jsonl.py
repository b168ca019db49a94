"""Paper records as JSON Lines (one ``Paper`` object per line), or as one JSON array of them.

This is paperbot's own exchange format: what a person writes by hand (``year`` is accepted
for ``published``) and what an export of the record store looks like. Each record is
validated with ``Paper.model_validate``; one that does not validate is skipped with pydantic's
message, quoting the line number. Blank lines are ignored. Provenance a record already carries
(an export keeps it) is kept, and a ``jsonl`` entry is added after it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from retrieval.records import Paper, Provenance
from retrieval.sources.base import (
    ItemRejected,
    ParseOutcome,
    SkippedItem,
    check_field_sizes,
    summarize_validation_error,
    supplied_fields,
    today_iso,
)

FORMAT = "jsonl"


def load_json(text: str) -> Any:
    """``json.loads`` whose every failure (syntax, absurd nesting, huge numbers) is a ValueError."""
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise ValueError("JSON is nested too deeply") from exc


def describe_json_error(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc.msg} at column {exc.colno}"
    return f"invalid JSON: {exc}"


def _add_record(obj: Any, item: str, outcome: ParseOutcome) -> None:
    if not isinstance(obj, dict):
        outcome.skipped.append(SkippedItem(item, f"not a JSON object (found {type(obj).__name__})"))
        return
    try:
        check_field_sizes(obj)
    except ItemRejected as rejected:
        outcome.skipped.append(SkippedItem(item, rejected.reason))
        return
    try:
        paper = Paper.model_validate(obj)
    except ValidationError as exc:
        outcome.skipped.append(SkippedItem(item, summarize_validation_error(exc)))
        return
    paper.provenance.append(
        Provenance(
            source=FORMAT, source_id=paper.id, fields=supplied_fields(paper), retrieved=today_iso()
        )
    )
    outcome.papers.append(paper)


def json_items(text: str, outcome: ParseOutcome) -> Iterator[tuple[Any, str]]:
    """(value, label) for each item of a document that is one JSON array ("item 3"), else for
    each non-blank line of JSON Lines ("line 17"); a line that is no JSON is a skipped item."""
    body = text.lstrip("\ufeff \t\r\n")
    if body.startswith("["):
        try:
            items = load_json(body)
        except ValueError:
            items = None  # not one array after all: read it line by line and report each line
        if isinstance(items, list):
            for number, obj in enumerate(items, 1):
                yield obj, f"item {number}"
            return
    # split("\n"), not splitlines(): U+2028 and friends may sit raw inside a JSON string
    for number, line in enumerate(text.lstrip("\ufeff").split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = load_json(line)
        except ValueError as exc:
            outcome.skipped.append(SkippedItem(f"line {number}", describe_json_error(exc)))
            continue
        yield obj, f"line {number}"


def parse_jsonl(text: str) -> ParseOutcome:
    """Every valid Paper record of the text; bad lines are reported with their line number."""
    outcome = ParseOutcome(format=FORMAT)
    for obj, label in json_items(text, outcome):
        _add_record(obj, label, outcome)
    return outcome
