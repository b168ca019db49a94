"""Parsers against hostile sizes and shapes: deep nesting, crashing files, duplicates, budgets.

* Deep nesting: a value nested thousands deep, in every format that nests (JSON Lines, CSL-JSON,
  the arXiv snapshot, the saved API responses), costs its item, never the file or the command;
  the real ``paperbot ingest deep.jsonl good.bib`` exits 0 with the good file stored.
* A bad file never stops the others: any exception while one file is read (a bug too) skips
  that file with a reason quoting the reference its logged traceback carries; an interrupt
  still stops the command.
* Duplicates: 4,000 copies of one entry fold in linear work (counted, not timed) into one
  record whose provenance keeps at most ``MAX_PROVENANCE_ENTRIES`` entries, reported once.
* Budgets: a file is read for at most ``MAX_ENTRIES_PER_FILE`` entries and
  ``MAX_SECONDS_PER_FILE`` of CPU time, in every reader, with one skipped item saying so; a
  JSON array is never decoded whole. Small budgets are monkeypatched in to keep this fast.
"""

# The documents below are JSON templates: "%s" keeps their braces single (f-strings would double each).
# ruff: noqa: UP031

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import retrieval.ingest.pipeline as ingest
import retrieval.records.merge as merge
from retrieval.errors import ParseError
from retrieval.ingest.pipeline import ingest_papers, read_files
from retrieval.records.merge import MAX_PROVENANCE_ENTRIES, dedupe, merge_papers, merge_provenance
from retrieval.records.paper import Paper, Provenance
from retrieval.sources.files import base
from retrieval.sources.files.detect import parse_file, parse_text
from tests.cli.conftest import paperbot
from tests.support.model_cache import link_model_cache

DEEP = 3_000
GOOD_BIB = "@article{good1,\n  title = {A perfectly ordinary paper},\n  author = {Lovelace, Ada},\n  year = 2020\n}\n"
ENTRY = ("@article{{{key},\n  title = {{A Study of Things in Depth}},\n  author = {{Smith, John and Doe, Jane}},\n"
         "  journal = {{J. Things}},\n  year = {{2020}},\n  doi = {{10.1000/xyz}}\n}}\n")


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _documents(value: str) -> dict[str, str]:
    """One document per JSON format with ``value`` (deeply nested) in the places it walks."""
    return {
        "jsonl": '{"title": "A deep one", "authors": [{"name": "Ada Lovelace"}], "extra_fields": %s}\n'
                 '{"title": "A good one", "authors": [{"name": "Ada Lovelace"}], "year": 2020}\n' % value,
        "csl-json": '[{"id": "a", "title": "Deep", "DOI": "10.1/x", "author": %s, "note": %s},'
                    ' {"id": "b", "title": "A good one", "DOI": "10.1/y"}]' % (value, value),
        "arxiv-snapshot": '{"id": "0704.0001", "title": "t", "authors_parsed": %s, "versions": %s, '
                          '"submitter": "x", "update_date": "2020-01-01"}\n' % (value, value),
        "openalex": '{"id": "https://openalex.org/W1", "title": "t", "authorships": %s, '
                    '"abstract_inverted_index": %s, "primary_location": %s}' % (value, value, value),
        "openalex-error": '{"error": %s, "message": %s}' % (value, value),
        "crossref": '{"status": "ok", "message-type": "work", "message": {"title": %s, "author": %s, '
                    '"DOI": "10.1/x", "reference-count": 1}}' % (value, value),
        "crossref-error": '{"status": "failed", "message-type": "validation-failure", "message": %s}' % value,
        "semantic-scholar": '{"paperId": "x", "title": "t", "authors": %s, "externalIds": %s}' % (value, value),
        "dblp": '{"result": {"hits": {"hit": [{"info": {"title": "t", "authors": {"author": %s}, "ee": %s}}]}}}'
                % (value, value),
    }


# --- deep nesting ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(_documents("0")))
def test_deep_nesting_costs_the_item_not_the_file(tmp_path: Path, name: str) -> None:
    """Around the recursion limit (where ``json.loads`` still succeeds and a later walk may not)
    and far beyond it, detected or forced, every format reads the file without a crash."""
    fmt = name.removesuffix("-error")
    limit = sys.getrecursionlimit()
    for depth in [*range(limit - 400, limit + 20, 3), DEEP]:
        text = _documents(_nested(depth))[name]
        path = tmp_path / f"deep{depth}.json"
        path.write_text(text, encoding="utf-8")
        for forced in (None, fmt):
            try:
                outcome = parse_file(path, forced)
            except ParseError:
                continue  # a whole-file refusal with a message is fine; a crash is not
            if name == "jsonl" and forced:
                assert [p.title for p in outcome.papers][-1] == "A good one"


def test_a_deep_jsonl_line_is_skipped_with_its_reason() -> None:
    text = '{"title": "Deep", "x": %s}\n{"title": "A good one"}\n' % _nested(DEEP)
    outcome = parse_text(text, None, "deep.jsonl")
    assert outcome.format == "jsonl"
    assert [p.title for p in outcome.papers] == ["A good one"]
    assert [(s.item, s.reason) for s in outcome.skipped] == [("line 1", "invalid JSON: JSON is nested too deeply")]


@pytest.mark.slow
def test_the_cli_ingests_the_good_file_beside_a_deep_one(tmp_path: Path) -> None:
    (tmp_path / "deep.jsonl").write_text('{"title": "Deep", "authors": %s}\n' % _nested(DEEP), encoding="utf-8")
    (tmp_path / "good.bib").write_text(GOOD_BIB, encoding="utf-8")
    run = paperbot("ingest", "deep.jsonl", "good.bib", "--json", data_dir=link_model_cache(tmp_path / "data"),
                   cwd=tmp_path)
    assert run.code == 0, run.stderr
    report = run.json()
    assert report["added"] == 1
    assert {"item": "deep.jsonl: line 1", "reason": "invalid JSON: JSON is nested too deeply"} in report["skipped"]
    exported = paperbot("export", data_dir=tmp_path / "data", cwd=tmp_path)  # the store, seen through the CLI
    assert exported.code == 0, exported.stderr
    assert [json.loads(line)["title"] for line in exported.stdout.splitlines()] == ["A perfectly ordinary paper"]


# --- a bad file never stops the others ---------------------------------------------------------


def _crash_on(name: str, exc: BaseException, monkeypatch: pytest.MonkeyPatch) -> None:
    real = ingest.parse_file

    def parse(path: Path, fmt: str | None = None) -> Any:
        if Path(path).name == name:
            raise exc
        return real(path, fmt)

    monkeypatch.setattr(ingest, "parse_file", parse)


@pytest.mark.parametrize("exc", [RecursionError("maximum recursion depth exceeded"), KeyError("title"),
                                 UnicodeError("odd"), MemoryError()], ids=lambda e: type(e).__name__)
def test_any_exception_reading_one_file_skips_that_file_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, exc: Exception
) -> None:
    (tmp_path / "bad.bib").write_text(GOOD_BIB.replace("good1", "bad1"), encoding="utf-8")
    (tmp_path / "good.bib").write_text(GOOD_BIB, encoding="utf-8")
    _crash_on("bad.bib", exc, monkeypatch)
    with caplog.at_level(logging.ERROR, logger="retrieval.ingest.pipeline"):
        papers, report = read_files([tmp_path / "bad.bib", tmp_path / "good.bib"])
    assert [p.title for p in papers] == ["A perfectly ordinary paper"]
    [skipped] = report.skipped
    assert skipped.item == str(tmp_path / "bad.bib")
    reference = re.search(r"ref ([0-9a-f]{8})", skipped.reason)
    assert reference, skipped.reason
    expected = "the memory ran out" if isinstance(exc, MemoryError) else type(exc).__name__
    assert expected in skipped.reason
    [record] = [r for r in caplog.records if reference.group(1) in r.getMessage()]
    assert record.exc_info and record.exc_info[1] is exc  # the traceback is in the log
    assert [result.problem is not None for result in report.files] == [True, False]


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(3)], ids=lambda e: type(e).__name__)
def test_an_interrupt_still_stops_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              exc: BaseException) -> None:
    (tmp_path / "bad.bib").write_text(GOOD_BIB, encoding="utf-8")
    _crash_on("bad.bib", exc, monkeypatch)
    with pytest.raises(type(exc)):
        read_files([tmp_path / "bad.bib"])


# --- duplicates --------------------------------------------------------------------------------


class _Index:
    """Just enough of ``PaperIndex`` for ``ingest_papers``: an empty store that accepts everything."""

    def __init__(self) -> None:
        self.stored: list[Paper] = []

    def find_matches(self, paper: Paper) -> list[Paper]:
        return []

    def find_matches_many(self, papers: list[Paper]) -> list[list[Paper]]:
        return [[] for _ in papers]

    def upsert(self, papers: list[Paper], *, replaces: dict[str, str] | None = None,
               progress: Callable[[int, int], None] | None = None) -> SimpleNamespace:
        self.stored.extend(papers)
        return SimpleNamespace(added=[p.id for p in papers], updated=[], unchanged=[])

    def delete(self, ids: list[str]) -> int:
        return 0

    def encoding_ahead(self, papers: list[Paper]) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


def _counting_provenance(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the provenance entries ``merge_provenance`` is handed: the work of merging them."""
    work = {"entries": 0, "calls": 0}

    def counted(a: list[Provenance], b: list[Provenance], *args: Any, **kwargs: Any) -> list[Provenance]:
        work["entries"] += len(a) + len(b)
        work["calls"] += 1
        return merge_provenance(a, b, *args, **kwargs)

    monkeypatch.setattr(merge, "merge_provenance", counted)
    return work


@pytest.mark.parametrize("keys", ["distinct", "same"])
def test_4000_duplicates_merge_in_linear_work_into_a_bounded_record(monkeypatch: pytest.MonkeyPatch,
                                                                    keys: str) -> None:
    copies = 4_000
    text = "".join(ENTRY.format(key=f"smith2020-{i}" if keys == "distinct" else "smith2020") for i in range(copies))
    papers = parse_text(text, "bibtex").papers
    assert len(papers) == copies
    work = _counting_provenance(monkeypatch)
    index = _Index()
    report = ingest_papers(index, papers)  # type: ignore[arg-type]
    [record] = index.stored
    assert report.merged_duplicates == copies - 1
    assert work["entries"] <= (MAX_PROVENANCE_ENTRIES + 2) * copies  # quadratic today: ~8 million
    assert len(record.provenance) <= MAX_PROVENANCE_ENTRIES
    capped = [w for w in report.warnings if "source entries describe this paper" in w.reason]
    if keys == "distinct":
        assert len(capped) == 1, capped  # reported once, for the one record
        assert capped[0].reason.startswith(f"{copies:,} source entries describe this paper")
        ids = [entry.source_id for entry in record.provenance]
        assert ids[:MAX_PROVENANCE_ENTRIES - 1] == [f"smith2020-{i}" for i in range(MAX_PROVENANCE_ENTRIES - 1)]
        assert ids[-1] == f"smith2020-{copies - 1}"  # the latest of the source
    else:
        assert capped == []  # the same key collapses: nothing was cut
        assert len(record.provenance) == 2  # the first key, and the copies LaTeX cannot cite


def test_the_cap_keeps_every_source_and_what_it_supplied() -> None:
    def entry(source: str, source_id: str, *fields: str, retrieved: str = "2024-01-01") -> Provenance:
        return Provenance(source=source, source_id=source_id, fields=list(fields), retrieved=retrieved)

    entries = [entry("bibtex", "k0", "title"), entry("crossref", "10.1/x", "doi", "venue")]
    entries += [entry("bibtex", f"k{i}", "title", *(["pages"] if i == 60 else [])) for i in range(1, 100)]
    entries += [entry("arxiv", "2101.00001", "abstract", retrieved="2023-05-05")]
    entries += [entry("bibtex", "k100", "title", retrieved="2025-02-02")]
    kept = merge_provenance(entries[:1], entries[1:])
    assert len(kept) == MAX_PROVENANCE_ENTRIES
    assert [e.source_id for e in kept[:3]] == ["k0", "10.1/x", "k1"]  # the first ones, in order
    assert [e.source_id for e in kept[-2:]] == ["2101.00001", "k100"]  # the latest of each source
    latest = kept[-1]
    assert "pages" in latest.fields  # what a dropped entry of its source supplied is still counted
    assert latest.retrieved == "2025-02-02"
    assert {e.source for e in kept} == {"bibtex", "crossref", "arxiv"}
    again = merge_provenance(entries[:1], entries[1:])
    assert merge_provenance(kept, again) == kept  # stable: the same entries merged again change nothing


def test_the_shortcut_for_identical_records_gives_what_the_field_rules_give() -> None:
    sample = Path(__file__).resolve().parents[2] / "retrieval" / "sample" / "arxiv_sample.jsonl"
    papers = parse_text(sample.read_text(encoding="utf-8"), "jsonl").papers[:60]
    for paper in papers:
        copy = paper.model_copy(update={"provenance": [Provenance(source="bibtex", source_id="copy")]})
        quick = merge_papers(paper, copy)
        full = merge._merge_fields(merge._attributed(merge.normalize_ids(paper)),
                                   merge._attributed(merge.normalize_ids(copy)))
        assert quick.model_dump() == full.model_dump(), paper.title


def test_dedupe_reports_each_cut_record_once() -> None:
    text = "".join(ENTRY.format(key=f"k{i}") for i in range(120))
    cut: list[tuple[str, int]] = []
    [record] = dedupe(parse_text(text, "bibtex").papers, on_capped=lambda p, n: cut.append((p.title, n)))
    assert cut == [("A Study of Things in Depth", 120)]
    assert len(record.provenance) == MAX_PROVENANCE_ENTRIES


# --- entry and time budgets --------------------------------------------------------------------


def _many(fmt: str, count: int) -> str:
    """``count`` distinct entries in ``fmt``."""
    if fmt == "bibtex":
        return "".join(f"@misc{{k{i}, title = {{Paper number {i}}}}}\n" for i in range(count))
    if fmt == "ris":
        return "".join(f"TY  - JOUR\nTI  - Paper number {i}\nER  - \n" for i in range(count))
    if fmt == "jsonl":
        return "".join(json.dumps({"title": f"Paper number {i}"}) + "\n" for i in range(count))
    if fmt == "jsonl-array":
        return json.dumps([{"title": f"Paper number {i}", "authors": [], "year": 2020} for i in range(count)])
    if fmt == "csl-json":
        return json.dumps([{"id": f"k{i}", "title": f"Paper number {i}", "type": "article",
                            "issued": {"date-parts": [[2020]]}, "container-title": "J"} for i in range(count)])
    if fmt == "arxiv-snapshot":
        return "".join(json.dumps({"id": f"0704.{i:04d}", "title": f"Paper number {i}", "submitter": "x",
                                   "update_date": "2020-01-01"}) + "\n" for i in range(1, count + 1))
    if fmt == "openalex":
        return json.dumps({"meta": {"count": count, "db_response_time_ms": 1}, "results": [
            {"id": f"https://openalex.org/W{i + 1}", "title": f"Paper number {i}", "publication_year": 2020}
            for i in range(count)]})
    if fmt == "crossref":
        return "".join(json.dumps({"status": "ok", "message-type": "work", "message": {
            "DOI": f"10.1/{i}", "title": [f"Paper number {i}"], "reference-count": 0}}) + "\n" for i in range(count))
    raise AssertionError(fmt)


ENTRY_FORMATS = ["bibtex", "ris", "jsonl", "jsonl-array", "csl-json", "arxiv-snapshot", "openalex", "crossref"]


@pytest.mark.parametrize("fmt", ENTRY_FORMATS)
def test_a_file_is_read_for_at_most_the_entry_budget(monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    monkeypatch.setattr(base, "MAX_ENTRIES_PER_FILE", 1_000)
    outcome = parse_text(_many(fmt, 1_500), None, "many")
    assert outcome.format == fmt.removesuffix("-array")
    assert len(outcome.papers) == 1_000
    [notice] = outcome.skipped
    assert notice.item.endswith("and every entry after it")
    assert notice.reason == ("the file holds more than 1,000 entries; only the first 1,000 were read: "
                             "split it into files of at most 1,000 entries")


def test_bibtex_stops_reading_entries_past_the_budget_not_after_building_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "MAX_ENTRIES_PER_FILE", 1_000)
    built: list[str] = []
    from retrieval.sources.files import bibtex

    real = bibtex.entry_to_fields

    def counted(entry: bibtex.BibEntry) -> dict[str, object]:
        built.append(entry.key)
        return real(entry)

    monkeypatch.setattr(bibtex, "entry_to_fields", counted)
    no_brace = "".join(f"@article k{i}, title = x\n" for i in range(600))  # lines BibTeX itself skips
    outcome = parse_text(no_brace + _many("bibtex", 1_500), "bibtex")
    assert len(built) == 400 and len(outcome.papers) == 400
    assert len(outcome.skipped) == 601 and outcome.skipped[-1].item == "entry at line 1001 and every entry after it"


STOPPED_AT = {"bibtex": "entry 'k{n}' (line {line})", "jsonl": "line {line}", "csl-json": "item {line} (k{n})",
              "ris": "record {line} (line {ris_line})"}


@pytest.mark.parametrize("fmt", list(STOPPED_AT))
def test_a_file_is_read_for_at_most_its_cpu_time(monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    # A clock that advances one millisecond each time it is read: reading stops after some 300
    # reads of the clock whatever the host's speed (a real clock let a fast host read them all).
    ticks = iter(range(10**9))
    monkeypatch.setattr(base, "cpu_seconds", lambda: next(ticks) / 1000)
    monkeypatch.setattr(base, "MAX_SECONDS_PER_FILE", 0.3)
    count = 20_000
    outcome = parse_text(_many(fmt, count), fmt, "slow")
    read = len(outcome.papers)
    assert read < 1_000
    assert [p.title for p in outcome.papers] == [f"Paper number {i}" for i in range(read)]
    [notice] = outcome.skipped
    # the notice names the first entry not read (BibTeX collects entries before building them:
    # time spent collecting may leave none read, and the notice says so)
    where = STOPPED_AT[fmt].format(n=read, line=read + 1, ris_line=3 * read + 1)
    assert notice.item in (f"{where} and every entry after it", f"{where.split(' (k')[0]} and every entry after it")
    assert notice.reason == ("reading the file took more than 0.3 s of CPU time; only the entries before "
                             "this one were read: split it into smaller files")


def test_a_large_json_array_is_never_decoded_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "MAX_ENTRIES_PER_FILE", 1_000)
    text = json.dumps([{"title": "x"}] * 300_000)  # 4.5 MB of text; whole, some 70 MB of objects
    tracemalloc.start()
    try:
        outcome = parse_text(text, "csl-json", "big.json")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(outcome.papers) == 1_000
    assert peak < 15 * 1024 * 1024, f"{peak / 1e6:.0f} MB"
