"""Paper records as JSON Lines (one ``Paper`` object per line), or as one JSON array of them.

This is paperbot's own exchange format: what a person writes by hand (``year`` is accepted
for ``published``) and what an export of the record store looks like. Each record is
validated with ``Paper.model_validate``; one that does not validate is skipped with pydantic's
message, quoting the line number. Blank lines are ignored. Provenance a record already carries
(an export keeps it) is kept, and a ``jsonl`` entry is added after it.

Memory follows what is kept: lines are decoded one at a time, and so are the items of one JSON
array (``json_array_items``: a first pass checks that the document is one array, decoding an
item at a time and dropping it, a second yields them), so a 200 MB array is never held as one
Python list; both stop at the file's entry and time budget (``base.FileBudget``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from retrieval.records.paper import Paper
from retrieval.results import SkippedItem
from retrieval.sources.files.base import (
    NESTED_TOO_DEEPLY,
    ItemRejected,
    ParseOutcome,
    check_field_sizes,
    own_entry,
    summarize_validation_error,
    supplied_fields,
)

FORMAT = "jsonl"
_DECODER = json.JSONDecoder()
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def load_json(text: str) -> Any:
    """``json.loads`` whose every failure (syntax, absurd nesting, huge numbers) is a ValueError."""
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise ValueError("JSON is nested too deeply") from exc


def _decode_at(text: str, pos: int) -> tuple[Any, int]:
    """The JSON value starting at ``pos`` and the position after it (errors as ``load_json``'s)."""
    try:
        return _DECODER.raw_decode(text, pos)
    except RecursionError as exc:
        raise ValueError("JSON is nested too deeply") from exc


class TooDeep:
    """An array item nested too deeply to decode: skipped whole, its neighbours read (the
    readers report it as one skipped item, ``NESTED_TOO_DEEPLY``)."""

    __slots__ = ()


TOO_DEEP = TooDeep()
_STRING_END = re.compile(r'(?:[^"\\]|\\.)*"', re.DOTALL)


def _value_end(body: str, pos: int) -> int:
    """The position after the array or object starting at ``pos``, found by counting brackets
    (no recursion, so any depth); JSONDecodeError when it never closes."""
    depth = 0
    while pos < len(body):
        char = body[pos]
        if char == '"':
            end = _STRING_END.match(body, pos + 1)
            if end is None:
                break
            pos = end.end()
            continue
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return pos + 1
        pos += 1
    raise json.JSONDecodeError("Unterminated array or object", body, pos)


def _array_elements(body: str) -> Iterator[Any]:
    """The items of the JSON array ``body`` (it starts with ``[``) one at a time, ``TOO_DEEP`` for
    an item nested too deeply to decode; ValueError where it stops being one array (a syntax
    error, or anything but white space after its ``]``)."""
    pos = _JSON_SPACE.match(body, 1).end()  # type: ignore[union-attr]
    if not body.startswith("]", pos):
        while True:
            try:
                value, pos = _decode_at(body, pos)
            except ValueError as exc:
                if isinstance(exc, json.JSONDecodeError) or not body.startswith(("[", "{"), pos):
                    raise
                value, pos = TOO_DEEP, _value_end(body, pos)
            yield value
            pos = _JSON_SPACE.match(body, pos).end()  # type: ignore[union-attr]
            if body.startswith(",", pos):
                pos = _JSON_SPACE.match(body, pos + 1).end()  # type: ignore[union-attr]
                continue
            if body.startswith("]", pos):
                break
            raise json.JSONDecodeError("Expecting ',' delimiter", body, pos)
    end = _JSON_SPACE.match(body, pos + 1).end()  # type: ignore[union-attr]
    if end != len(body):
        raise json.JSONDecodeError("Extra data", body, end)


def json_array_items(body: str, outcome: ParseOutcome) -> Iterator[Any] | None:
    """The items of ``body`` when it is one JSON array, else None; never the whole list at once.

    The first pass decodes item after item, keeping none, to learn that the document is one
    array (up to the file's entry budget: more items than that and the rest is not read anyway);
    the second yields them. Both passes stop at the file's time budget."""
    if not body.startswith("["):
        return None
    try:
        for count, _ in enumerate(_array_elements(body)):
            if count > outcome.budget.limit or not outcome.budget.in_time(f"item {count + 1}"):
                break
    except ValueError:
        return None
    return _array_elements(body)


def numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """(number, line) of each non-blank line, split at "\n" only (U+2028 and friends may sit raw
    inside a JSON string), without holding a list of every line."""
    start, number, size = 0, 0, len(text)
    while start <= size:
        end = text.find("\n", start)
        if end < 0:
            end = size
        number += 1
        line = text[start:end]
        if line.strip():
            yield number, line
        start = end + 1


def describe_json_error(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc.msg} at column {exc.colno}"
    return f"invalid JSON: {exc}"


def _add_record(obj: Any, item: str, outcome: ParseOutcome) -> None:
    if obj is TOO_DEEP:
        outcome.skipped.append(SkippedItem(item, NESTED_TOO_DEEPLY))
        return
    if not isinstance(obj, dict):
        outcome.skipped.append(SkippedItem(item, f"not a JSON object (found {type(obj).__name__})"))
        return
    try:
        check_field_sizes(obj)
        paper = Paper.model_validate(obj)
    except ItemRejected as rejected:
        outcome.skipped.append(SkippedItem(item, rejected.reason))
        return
    except ValidationError as exc:
        outcome.skipped.append(SkippedItem(item, summarize_validation_error(exc)))
        return
    except RecursionError:  # a value nested too deeply to walk
        outcome.skipped.append(SkippedItem(item, NESTED_TOO_DEEPLY))
        return
    paper.provenance.append(own_entry(FORMAT, paper.id, supplied_fields(paper)))
    outcome.papers.append(paper)


def json_items(text: str, outcome: ParseOutcome) -> Iterator[tuple[Any, str]]:
    """(value, label) for each item of a document that is one JSON array ("item 3"), else for
    each non-blank line of JSON Lines ("line 17"); a line that is no JSON is a skipped item.
    Stops at the file's budget (``outcome.budget``)."""
    items = json_array_items(text.lstrip("\ufeff \t\r\n"), outcome)
    if items is not None:
        for number, obj in enumerate(items, 1):
            if not outcome.budget.take(f"item {number}"):
                return
            yield obj, f"item {number}"
        return
    # not one array: read it line by line and report each bad line
    for number, line in numbered_lines(text.lstrip("\ufeff")):
        if not outcome.budget.take(f"line {number}"):
            return
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
