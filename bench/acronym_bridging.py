"""Acronyms read both ways: does a query worded one way find the record worded the other?

    python bench/acronym_bridging.py [--data DIR] [--out DIR] [--reuse-index] [--encoder E] [--json OUT]

Data: ``scholars-real/`` (default ``../shared/datasets/scholars-real``, read at run time, never
copied): the 40 real publication lists, in one index (``bench.people.open_index``), 70 % of whose
records have a title and no abstract.

Protocol (fixed before any figure was read):

1. **Definitions.** Every record's title and abstract are read by ``acronyms.definitions``; the
   long form the index agrees on per acronym is ``acronyms.agreed`` over all of them.
2. **Queries.** A record whose title and abstract write an agreed concept one way only (its
   acronym in either number, or its long form, as whole BM25 tokens) gives one query: its title with that writing
   replaced by the other, as the defining records wrote it ("Unit test generation with LLMs" ->
   "Unit test generation with large language models"). The first such concept of the title is
   used; records sharing a title key are asked once.
3. **Search.** Each query through ``PaperIndex.retrieve`` (hybrid, k = 10) twice on the same index,
   with acronym bridging on and off (``FusionConfig.acronym_bridging``); the rank of the record (a
   record of the same title key counts). Nothing is tuned here; queries are still split by
   ``split_half("acronym_bridging", record id)`` and both halves reported.
4. **Speed.** The queries' median time with bridging on and off, interleaved in one process,
   and their ratio; the same for up to 200 *plain* queries, the titles of records writing no
   agreed concept either way (chosen by ``split_half``'s hash order), which pay for reading the
   candidates' words and find nothing to bridge.

Reported per direction (acronym -> long form, long form -> acronym) and half: Recall@1,
Recall@10 and MRR (over the first 10) with bridging on and off. ``--json OUT`` writes every
figure and every query's ranks. Exit status 0 unless the data is missing.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import HELD_OUT, TUNE, load_note, markdown_table, split_half, start_scratch_run, write_json
from bench.people import add_index_arguments, load_owners, open_index
from retrieval.index.acronyms import Definition, agreed, contains_run, defined_in, forms, singular
from retrieval.index.paper_index import PaperIndex
from retrieval.records.paper import Paper, title_key
from retrieval.text import bm25_tokens

K = 10
SHORT_TO_LONG, LONG_TO_SHORT = "acronym -> long form", "long form -> acronym"


def _written(found: Sequence[Definition]) -> dict[str, tuple[str, str]]:
    """acronym token -> (the acronym, the long form) as most definitions wrote them."""
    counts: dict[str, Counter[tuple[str, str]]] = {}
    for definition in found:
        counts.setdefault(definition.acronym, Counter())[(singular(definition.written_acronym),
                                                          definition.written_long_form)] += 1
    return {token: max(writings, key=lambda writing: (writings[writing], writing))
            for token, writings in counts.items()}


def _long_form_pattern(long_form: str) -> re.Pattern[str]:
    words = long_form.split()
    last = re.escape(words[-1][:-1] if words[-1].endswith("s") else words[-1]) + "s?"
    return re.compile(r"\b" + r"[\s-]+".join([*map(re.escape, words[:-1]), last]) + r"\b", re.IGNORECASE)


def index_definitions(papers: Sequence[Paper]) -> tuple[list[Definition], dict[str, tuple[str, ...]]]:
    """Every definition the records' titles and abstracts make, and the long forms the index
    agrees on (protocol 1)."""
    found = defined_in(part for paper in papers for part in (paper.title, paper.abstract))
    return found, agreed(found)


def queries(papers: Sequence[Paper], found: Sequence[Definition],
            meanings: dict[str, tuple[str, ...]]) -> list[dict[str, Any]]:
    """One query per record that writes an agreed concept one way only (protocol 2)."""
    written = _written([d for d in found if meanings.get(d.acronym) == d.long_form])
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for paper in papers:
        key = title_key(paper.title)
        if key in seen:
            continue
        title_tokens = bm25_tokens(paper.title)
        all_tokens = bm25_tokens(f"{paper.title}\n{paper.abstract or ''}")
        for acronym, long_form in meanings.items():
            has_short = not set(forms(acronym)).isdisjoint(all_tokens)  # "LLM" or "LLMs"
            has_long = contains_run(all_tokens, long_form)
            if has_short == has_long:
                continue
            short_text, long_text = written[acronym]
            if has_short and not set(forms(acronym)).isdisjoint(title_tokens):
                query = re.sub(rf"\b{re.escape(short_text)}s?\b", long_text, paper.title, count=1)
                direction = SHORT_TO_LONG
            elif has_long and contains_run(title_tokens, long_form):
                query = _long_form_pattern(long_text).sub(short_text, paper.title, count=1)
                direction = LONG_TO_SHORT
            else:
                continue
            if query == paper.title:
                continue
            seen.add(key)
            rows.append({"record_id": paper.id, "title": paper.title, "query": query, "direction": direction,
                         "acronym": short_text, "long_form": long_text,
                         "half": split_half("acronym_bridging", paper.id)})
            break
    return rows


def plain_queries(papers: Sequence[Paper], meanings: dict[str, tuple[str, ...]], limit: int = 200) -> list[str]:
    """Titles of records that write no agreed concept in either writing (protocol 4)."""
    plain = []
    for paper in papers:
        tokens = bm25_tokens(f"{paper.title}\n{paper.abstract or ''}")
        if not any(not set(forms(acronym)).isdisjoint(tokens) or contains_run(tokens, long_form)
                   for acronym, long_form in meanings.items()):
            plain.append(paper)
    plain.sort(key=lambda paper: hashlib.sha256(f"acronym_bridging/{paper.id}".encode()).hexdigest())
    return [paper.title for paper in plain[:limit]]


def time_plain(index: PaperIndex, titles: Sequence[str]) -> dict[str, list[float]]:
    """Each plain query with bridging on and off, interleaved (protocol 4)."""
    rows = [{"query": title, "title": title} for title in titles]
    return measure(index, rows, lambda _: None)


def _rank(index: PaperIndex, query: str, key: str) -> tuple[int | None, float]:
    started = time.perf_counter()
    hits = index.retrieve(query, k=K).hits
    seconds = time.perf_counter() - started
    return next((n for n, hit in enumerate(hits, 1) if title_key(hit.paper.title) == key), None), seconds


def measure(index: PaperIndex, rows: list[dict[str, Any]], progress: Callable[[str], None]) -> dict[str, list[float]]:
    """Each query with bridging on and off, interleaved (protocol 3-4); ranks into ``rows``."""
    bridging = index.searcher.fusion
    settings = {"on": bridging if bridging.acronym_bridging else dataclasses.replace(bridging, acronym_bridging=True),
                "off": dataclasses.replace(bridging, acronym_bridging=False)}
    times: dict[str, list[float]] = {"on": [], "off": []}
    try:
        for n, row in enumerate(rows, 1):
            for name in (("on", "off") if n % 2 else ("off", "on")):
                index.searcher.fusion = settings[name]
                row[f"rank_{name}"], seconds = _rank(index, row["query"], title_key(row["title"]))
                times[name].append(seconds)
            if n % 50 == 0:
                progress(f"{n} of {len(rows)} queries")
    finally:
        index.searcher.fusion = bridging
    return times


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    results: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for direction in (SHORT_TO_LONG, LONG_TO_SHORT, "both"):
        for half in (TUNE, HELD_OUT, "all"):
            chosen = [r for r in rows if direction in ("both", r["direction"]) and half in ("all", r["half"])]
            for name in ("on", "off"):
                ranks = [r[f"rank_{name}"] for r in chosen]
                results.setdefault(direction, {}).setdefault(half, {})[name] = {
                    "queries": len(ranks),
                    "recall_at_1": sum(rank == 1 for rank in ranks) / len(ranks) if ranks else 0.0,
                    "recall_at_10": sum(rank is not None for rank in ranks) / len(ranks) if ranks else 0.0,
                    "mrr": sum(1 / rank for rank in ranks if rank) / len(ranks) if ranks else 0.0,
                }
    return results


def report(figures: dict[str, Any]) -> str:
    lines = []
    for direction, halves in figures["results"].items():
        table = []
        for half, by_setting in halves.items():
            for name in ("on", "off"):
                scores = by_setting[name]
                table.append([half, f"bridging {name}", scores["queries"], f"{scores['recall_at_1']:.3f}",
                              f"{scores['recall_at_10']:.3f}", f"{scores['mrr']:.3f}"])
        lines += [f"Queries: {direction}.", "",
                  markdown_table(["half", "search", "queries", "R@1", "R@10", "MRR"], table), ""]
    on, off = figures["median_ms"]["on"], figures["median_ms"]["off"]
    lines.append(f"Median per query: {on:.1f} ms with bridging, {off:.1f} ms without (ratio {on / off:.2f}), "
                 "interleaved in this process.")
    plain_on, plain_off = figures["plain_median_ms"]["on"], figures["plain_median_ms"]["off"]
    lines.append(f"Plain queries ({figures['plain_queries']} titles writing no defined acronym): {plain_on:.1f} ms "
                 f"with bridging, {plain_off:.1f} ms without (ratio {plain_on / plain_off:.2f}).")
    lines.append(f"{len(figures['rows'])} queries from {figures['records']:,} records ({figures['defined']} acronyms "
                 f"the index agrees on); encoder {figures['encoder']}; {figures['seconds']:.0f} s; {load_note()}.")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_index_arguments(parser)
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args(argv)
    progress = start_scratch_run(args.out)
    started = time.perf_counter()
    owners = load_owners(args.data)
    index, _, ingest = open_index(owners, args.reuse_index, progress, encoder=args.encoder)
    try:
        papers = list(index.iter_papers())
        found, meanings = index_definitions(papers)
        rows = queries(papers, found, meanings)
        for _ in range(5):  # warm-up: the first searches load the BM25 snapshot and the encoder
            index.retrieve("warm-up query on graph partitioning", k=K)
        times = measure(index, rows, progress)
        plain_times = time_plain(index, plain_queries(papers, meanings))
    finally:
        index.close()
    figures = {"encoder": ingest["encoder"], "records": len(papers), "defined": len(meanings),
               "results": summarise(rows), "rows": rows,
               "median_ms": {name: 1000 * statistics.median(values) for name, values in times.items()},
               "plain_queries": len(plain_times["on"]),
               "plain_median_ms": {name: 1000 * statistics.median(values) for name, values in plain_times.items()},
               "seconds": time.perf_counter() - started}
    print(report(figures))
    if args.json is not None:
        write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
