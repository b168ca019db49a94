"""Cited answers over 40 real publication lists: listing, topic, mixed and unanswerable questions.

    python bench/answers_scholars.py [--data DIR] [--set FILE] [--out DIR] [--reuse-index] [--k 8]
                                     [--verbose] [--json OUT]

Data: ``scholars-real/`` (default ``../shared/datasets/scholars-real``, read at run time, never
copied), all 40 files ingested into one scratch index exactly as ``bench/people.py`` does
(``open_index``: ``Assistant.library.ingest_files``, the configured local encoder, a scratch
``PAPERBOT_DATA_DIR`` under ``bench/out/people-index/<hash>/``; the two benchmarks share it).

The set (``bench/data/scholars_questions.jsonl``, written by hand from the records, one object a
line: ``id``, ``kind``, ``question``, ``filters``, ``gold``) holds no text of those files: a gold
paper is ``{"owner": slug, "key": BibTeX entry key of the owner's file}``, resolved at run time by
parsing the file (``parse_file``; ``Paper.provenance[0].source_id`` is the entry key) and mapping
the entry to its index record with ``bench.people.RecordFinder`` (by id, duplicate finder, then
title). A key the parser gives two different records is refused as a gold reference.

Kinds and what counts as answered correctly (decided before any figure was seen):

* **topic** (gold papers; most are title-only records): not abstained and at least one gold
  record cited.
* **listing** (``filters`` only; gold derived here, never by the product's matcher): the
  *judge* takes the owner whose ``name``/``name_variants`` judge key (``bench.people.judge_key``)
  equals the filter's author, and keeps the entries of that owner's file that name the owner
  (the people benchmark's gold rule) and pass the years (the entry's parsed year, inclusive
  ``since``/``until``; an entry without a year fails a year filter) and the venue (folded
  substring of the entry's venue). Without an author, the entries of all 40 files are judged.
  *Tolerated* (neither required nor counted as outside): entries of the owner's file that pass
  the filter but do not name the owner (lists cut with "and others", editors-only volumes), and
  entries of other files that name the owner's key and pass the filter (a co-author copy or a
  namesake: the question cannot tell). Correct = not abstained, every gold record cited and no
  cited record outside gold + tolerated.
* **mixed** (filters plus a topic, gold papers): as topic. Each gold entry is also checked to
  pass its question's filters under the judge; violations are printed as set errors.
* **unanswerable**: correct = abstained.

Gold recall = gold records cited / gold records, averaged over the questions of a kind.
Abstention precision = abstentions on unanswerable questions / all abstentions; recall =
unanswerable questions abstained / unanswerable questions; false abstentions = answerable
(topic, listing, mixed) questions abstained / answerable. Shape = the declared kind (unanswerable
counted as topic) equals ``AnswerResult.kind``; filters = for listing and mixed questions, the
applied ``AnswerResult.filters`` equal the declared ones (authors folded, as sets).

Answers are extractive: ``Assistant(settings, index=index, chat_model=None).ask(question, k=k)``
with settings that carry no OpenAI key or base URL. ``--scripted`` answers with the scripted
model of ``bench/answers.py`` instead (its checks and answers measure the chain, not a model);
``--model-checks`` asks the configured endpoint for the checks only (no answer written, see
``ModelChecks``). "lately" questions declare the window the product documents
(``query_filters.RECENT_MONTHS`` before today, as whole years): since 2024 for a run in 2026.
Sets are reported per set and per half (``bench.common.split_half``). SciFact claims are not
asked here: run ``python bench/answers.py --no-endpoint`` beside it. ``--json OUT`` writes the
figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (
    HELD_OUT,
    REPO,
    TUNE,
    load_note,
    load_scifact,
    markdown_table,
    scifact_papers,
    split_half,
    start_scratch_run,
    write_json,
)
from bench.people import Owner, RecordFinder, add_index_arguments, judge_key, load_owners, open_index
from retrieval.answers.question_shape import applied_filters
from retrieval.config import Settings, load_settings
from retrieval.index.paper_index import PaperIndex
from retrieval.records.paper import Paper
from retrieval.results import AnswerResult, Citation
from retrieval.sources.files.detect import parse_file
from retrieval.text import fold

DEFAULT_SET = REPO / "bench" / "data" / "scholars_questions.jsonl"
KINDS = ("topic", "listing", "mixed", "unanswerable")
GOALS = {"listing": 1.0, "topic": 0.9, "unanswerable": 0.9, "false_abstentions": 0.05}


# The set and its resolution ----------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    id: str
    kind: str
    question: str
    filters: dict[str, Any]
    gold: list[dict[str, str]]
    set: str = "scholars_questions"  # the file's stem: names the set in reports and in ``split_half``

    @property
    def half(self) -> str:
        """The tuning or held-out half this question belongs to (``bench.common.split_half``)."""
        return split_half(self.set, self.id)


def load_set(path: Path) -> list[Question]:
    questions = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row["kind"] not in KINDS:
            raise SystemExit(f"{path}:{n}: unknown kind {row['kind']!r}")
        questions.append(Question(row["id"], row["kind"], row["question"], dict(row.get("filters") or {}),
                                  list(row.get("gold") or []), path.stem))
    ids = Counter(q.id for q in questions)
    if any(n > 1 for n in ids.values()):
        raise SystemExit(f"{path}: repeated ids {sorted(i for i, n in ids.items() if n > 1)}")
    return questions


@dataclass
class Entry:
    """One parsed entry of an owner's file and the index record holding it."""

    owner: str
    key: str
    paper: Paper
    record_id: str | None


@dataclass
class Corpus:
    """Every owner's parsed entries, by owner and by (owner, key)."""

    owners: dict[str, Owner]
    entries: list[Entry] = field(default_factory=list)
    by_key: dict[tuple[str, str], list[Entry]] = field(default_factory=dict)
    scifact: dict[str, str] = field(default_factory=dict)  # SciFact doc id -> record id, when indexed

    def resolve(self, ref: dict[str, str]) -> str:
        """The record id of a gold reference (``{owner, key}`` or ``{scifact}``); raises
        ``LookupError`` with the reason."""
        if "scifact" in ref:
            if ref["scifact"] not in self.scifact:
                raise LookupError(f"scifact/{ref['scifact']}: not in the index (run with --with-scifact)")
            return self.scifact[ref["scifact"]]
        found = self.by_key.get((ref["owner"], ref["key"]), [])
        ids = {e.record_id for e in found}
        if not found:
            raise LookupError(f"{ref['owner']}/{ref['key']}: no such entry key")
        if None in ids:
            raise LookupError(f"{ref['owner']}/{ref['key']}: entry not found in the index")
        if len(ids) > 1:
            raise LookupError(f"{ref['owner']}/{ref['key']}: the key names {len(found)} different records")
        return str(next(iter(ids)))

    def owner_of(self, author: str) -> Owner | None:
        key = judge_key(author)
        return next((o for o in self.owners.values() if key in o.keys), None)


def load_corpus(index: PaperIndex, records: Sequence[Paper], owners: Sequence[Owner]) -> tuple[Corpus, Counter[str]]:
    finder = RecordFinder(index, records)
    corpus = Corpus({o.slug: o for o in owners})
    for owner in owners:
        for paper in parse_file(owner.path).papers:
            key = paper.provenance[0].source_id if paper.provenance else ""
            entry = Entry(owner.slug, str(key), paper, finder.find(paper))
            corpus.entries.append(entry)
            corpus.by_key.setdefault((owner.slug, entry.key), []).append(entry)
    return corpus, finder.how


# The judge -----------------------------------------------------------------------------------


def passes(paper: Paper, filters: dict[str, Any]) -> bool:
    """Years and venue of the declared filter, on the parsed entry."""
    since, until, venue = filters.get("since"), filters.get("until"), filters.get("venue")
    if since is not None or until is not None:
        if paper.year is None:
            return False
        if since is not None and paper.year < int(since):
            return False
        if until is not None and paper.year > int(until):
            return False
    return not venue or fold(str(venue)).lower() in fold(paper.venue or "").lower()


@dataclass
class Expected:
    gold: set[str]
    tolerated: set[str]
    errors: list[str] = field(default_factory=list)


def judge_listing(corpus: Corpus, filters: dict[str, Any]) -> Expected:
    authors = [str(a) for a in filters.get("authors", [])]
    expected = Expected(set(), set())
    owners = []
    for author in authors:
        owner = corpus.owner_of(author)
        if owner is None:
            expected.errors.append(f"no owner is written {author!r}")
        else:
            owners.append(owner)
    for entry in corpus.entries:
        if entry.record_id is None or not passes(entry.paper, filters):
            continue
        if not authors:
            expected.gold.add(entry.record_id)
            continue
        names = [a.name for a in entry.paper.authors]
        for owner in owners:
            named = owner.named_in(names)
            if entry.owner == owner.slug and named:
                expected.gold.add(entry.record_id)
            elif entry.owner == owner.slug or named:
                expected.tolerated.add(entry.record_id)
    expected.tolerated -= expected.gold
    if not expected.gold:
        expected.errors.append("the filter matches no record")
    return expected


def expected_for(corpus: Corpus, q: Question) -> Expected:
    if q.kind == "listing":
        return judge_listing(corpus, q.filters)
    expected = Expected(set(), set())
    for ref in q.gold:
        try:
            expected.gold.add(corpus.resolve(ref))
        except LookupError as error:
            expected.errors.append(f"{q.set}/{q.id}: {error}")
    if q.kind in ("topic", "mixed") and not q.gold:
        expected.errors.append("no gold papers")
    if q.kind == "unanswerable" and q.gold:
        expected.errors.append("an unanswerable question with gold papers")
    if q.kind == "mixed":  # every gold paper must pass the question's own filter
        allowed = judge_listing(corpus, q.filters)
        expected.errors += [f"gold {ref['owner']}/{ref['key']} does not pass the filter {q.filters}"
                            for ref in q.gold if resolve_or_none(corpus, ref) not in allowed.gold]
    return expected


def resolve_or_none(corpus: Corpus, ref: dict[str, str]) -> str | None:
    try:
        return corpus.resolve(ref)
    except LookupError:
        return None


# Running and scoring ---------------------------------------------------------------------------


def normalised_filters(filters: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in filters.items():
        if value in (None, "", []):
            continue
        if key == "authors":
            out[key] = sorted(judge_key(str(a)) for a in value)
        elif key == "venue":
            out[key] = fold(str(value)).lower()
        else:
            out[key] = int(value)
    return out


def score(q: Question, expected: Expected, result: AnswerResult, seconds: float) -> dict[str, Any]:
    cited = [c.id for c in result.citations]
    hit = expected.gold & set(cited)
    outside = [c for c in cited if c not in expected.gold | expected.tolerated] if q.kind == "listing" else []
    answered = not result.abstained
    if q.kind == "unanswerable":
        correct = result.abstained
    elif q.kind == "listing":
        correct = answered and hit == expected.gold and not outside
    else:
        correct = answered and bool(hit)
    declared_shape = "topic" if q.kind == "unanswerable" else q.kind
    return {
        "id": q.id, "set": q.set, "half": q.half, "kind": q.kind, "correct": bool(correct), "abstained": result.abstained,
        "result_kind": result.kind, "shape_ok": result.kind == declared_shape,
        "filters": result.filters, "filters_ok": (normalised_filters(result.filters) == normalised_filters(q.filters)
                                                  if q.kind in ("listing", "mixed") else None),
        "cited": len(cited), "gold": len(expected.gold), "gold_cited": len(hit), "tolerated": len(expected.tolerated),
        "outside": len(outside), "recall": len(hit) / len(expected.gold) if expected.gold else None,
        "seconds": round(seconds, 3),
    }


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    by_kind: dict[str, Any] = {}
    for kind in KINDS:
        mine = [r for r in rows if r["kind"] == kind]
        n = len(mine)
        recalls = [r["recall"] for r in mine if r["recall"] is not None]
        filt = [r["filters_ok"] for r in mine if r["filters_ok"] is not None]
        by_kind[kind] = {
            "questions": n,
            "correct": sum(r["correct"] for r in mine) / n if n else None,
            "gold_recall": sum(recalls) / len(recalls) if recalls else None,
            "abstained": sum(r["abstained"] for r in mine) / n if n else None,
            "shape": sum(r["shape_ok"] for r in mine) / n if n else None,
            "filters": sum(filt) / len(filt) if filt else None,
            "outside": sum(r["outside"] for r in mine),
            "wrong": [r["id"] for r in mine if not r["correct"]],
        }
    abstained = [r for r in rows if r["abstained"]]
    unans = [r for r in rows if r["kind"] == "unanswerable"]
    answerable = [r for r in rows if r["kind"] != "unanswerable"]
    right = sum(1 for r in abstained if r["kind"] == "unanswerable")
    return {
        "kinds": by_kind,
        "abstention": {
            "abstentions": len(abstained),
            "precision": right / len(abstained) if abstained else None,
            "recall": right / len(unans) if unans else None,
            "false_abstention_rate": (sum(r["abstained"] for r in answerable) / len(answerable)) if answerable else None,
        },
        "shape": sum(r["shape_ok"] for r in rows) / len(rows) if rows else None,
        "p50_seconds": sorted(r["seconds"] for r in rows)[len(rows) // 2] if rows else None,
    }


def by_set_and_half(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per set and per half (tuning, held-out): answerable questions answered with a gold record
    cited, answerable questions abstained (false abstentions), unanswerable ones abstained."""
    table = []
    for name in dict.fromkeys(r["set"] for r in rows):
        for half in (TUNE, HELD_OUT):
            mine = [r for r in rows if r["set"] == name and r["half"] == half]
            answerable = [r for r in mine if r["kind"] in ("topic", "mixed")]
            listing = [r for r in mine if r["kind"] == "listing"]
            unans = [r for r in mine if r["kind"] == "unanswerable"]
            table.append({
                "set": name, "half": half, "questions": len(mine),
                "answerable": len(answerable),
                "gold_cited": sum(r["correct"] for r in answerable) / len(answerable) if answerable else None,
                "false_abstentions": (sum(r["abstained"] for r in answerable + listing) / len(answerable + listing)
                                      if answerable + listing else None),
                "listing": len(listing),
                "listing_complete": sum(r["correct"] for r in listing) / len(listing) if listing else None,
                "unanswerable": len(unans),
                "abstained_unanswerable": sum(r["abstained"] for r in unans) / len(unans) if unans else None,
                "wrong": [r["id"] for r in mine if not r["correct"]],
            })
    return table


class ModelChecks:
    """``--model-checks``: the evidence the chain would answer from, with the configured model's
    checks, and the gold records retrieved with and without the field-terms query."""

    def __init__(self, index: PaperIndex, settings: Settings, endpoint: Settings, k: int) -> None:
        from retrieval.answers.llm import build_chat_model

        if not endpoint.llm_configured:
            raise SystemExit("--model-checks needs OPENAI_BASE_URL or OPENAI_API_KEY")
        self.settings = endpoint.model_copy(update={"data_dir": settings.data_dir, "llm_field_terms": True,
                                                    "llm_judge_relevance": True})
        self.index, self.k = index, k
        self.model = build_chat_model(self.settings)
        self.endpoint = f"{endpoint.llm_model} at {endpoint.openai_base_url or 'the OpenAI API'}"

    def evidence(self, q: Question) -> tuple[AnswerResult, dict[str, set[str]]]:
        """The question parsed and its evidence context made as ``Assistant.ask`` makes them
        (``AnsweringService``), then the chain's evidence step with the model's checks."""
        from retrieval.answers.chain import AnswerOptions, choose_evidence
        from retrieval.answers.service import AnsweringService

        service = AnsweringService(self.index, self.settings, None)
        parsed = service.parse(q.question)
        filters, text = parsed.search_filters, parsed.search_text
        context = service.evidence_context(parsed.filters)
        plain = {hit.paper.id for hit in self.index.search(text, k=self.k, filters=filters)}
        chosen = choose_evidence(text, lambda query, k, f: self.index.search(query, k=k, filters=f), self.settings,
                                 self.model, AnswerOptions(k=self.k, filters=filters), context)
        citations = [Citation.from_paper(n, hit.paper, hit.score) for n, hit in enumerate(chosen.relevant, start=1)]
        result = AnswerResult(question=q.question, answer="", mode="llm", abstained=not citations, citations=citations,
                              kind="mixed" if q.kind == "mixed" else "topic", filters=applied_filters(filters),
                              notice=" ".join(chosen.notes) or None)
        return result, {"gold_retrieved_plain": plain, "gold_retrieved_checked": {h.paper.id for h in chosen.hits}}

    def describe(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"endpoint": self.endpoint, "halves": []}
        for name in dict.fromkeys(r["set"] for r in rows):
            for half in (TUNE, HELD_OUT):
                mine = [r for r in rows if r["set"] == name and r["half"] == half and r["kind"] in ("topic", "mixed")]
                if mine:
                    out["halves"].append({
                        "set": name, "half": half, "answerable": len(mine),
                        "retrieved_plain": sum(r["gold_retrieved_plain"] for r in mine) / len(mine),
                        "retrieved_with_field_terms": sum(r["gold_retrieved_checked"] for r in mine) / len(mine),
                    })
        return out

    def table(self, described: dict[str, Any]) -> str:
        rows = [(h["set"], h["half"], h["answerable"], _f(h["retrieved_plain"]), _f(h["retrieved_with_field_terms"]))
                for h in described["halves"]]
        return (f"model checks with {described['endpoint']}; {load_note()}\n"
                + markdown_table(["set", "half", "answerable", f"gold in the {self.k} retrieved",
                                  "with the field-terms query"], rows))


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def report(figures: dict[str, Any], verbose: bool) -> str:
    s = figures["summary"]
    k, a = s["kinds"], s["abstention"]
    goal = {"topic": f"gold cited ≥ {GOALS['topic']:.2f}", "listing": "100 % complete",
            "mixed": "", "unanswerable": f"abstained ≥ {GOALS['unanswerable']:.2f}"}
    rows = []
    for kind in KINDS:
        d = k[kind]
        rows.append((kind, d["questions"], _f(d["correct"]), _f(d["gold_recall"]), _f(d["abstained"]),
                     _f(d["shape"]), _f(d["filters"]), d["outside"] if kind == "listing" else "-", goal[kind]))
    halves = [(h["set"], h["half"], h["questions"], f"{_f(h['gold_cited'])} of {h['answerable']}",
               f"{_f(h['false_abstentions'])}", f"{_f(h['listing_complete'])} of {h['listing']}",
               f"{_f(h['abstained_unanswerable'])} of {h['unanswerable']}") for h in figures["halves"]]
    lines = [markdown_table(["set", "half", "questions", "answered, gold cited", "false abstentions",
                             "listings complete", "unanswerable abstained"], halves), ""]
    lines += [markdown_table(["kind", "questions", "answered correctly", "gold recall (cited)", "abstained",
                             "shape = declared", "filters = declared", "cited outside filter", "goal"], rows), ""]
    lines.append(markdown_table(["abstention", "value", "goal"], [
        ("precision (unanswerable / all abstentions)", f"{_f(a['precision'])} ({a['abstentions']} abstentions)", ""),
        ("recall (unanswerable abstained)", _f(a["recall"]), f"≥ {GOALS['unanswerable']:.2f}"),
        ("false abstentions (answerable abstained)", _f(a["false_abstention_rate"]),
         f"≤ {GOALS['false_abstentions']:.2f}"),
        ("shape classification, all questions", _f(s["shape"]), ""),
    ]))
    ingest, res = figures["ingest"], figures["resolution"]
    built = "reused index" if ingest["reused"] else f"ingested in {ingest['seconds']:.0f} s"
    lines.append("")
    lines.append(
        f"{figures['questions']} questions ({', '.join(f'{n} {kind}' for kind, n in figures['counts'].items())}); "
        f"{ingest['records']:,} records ({built}, encoder {ingest['encoder']}); gold references resolved "
        f"{res['resolved']}/{res['references']}; listing gold {res['listing_gold']} records "
        f"(+{res['listing_tolerated']} tolerated); extractive answers, k={figures['k']}, "
        f"p50 {s['p50_seconds']:.2f} s a question; {load_note()}. SciFact: run `python bench/answers.py --no-endpoint`."
    )
    wrong = {kind: k[kind]["wrong"] for kind in KINDS if k[kind]["wrong"]}
    lines.append("wrong: " + ("; ".join(f"{kind} {', '.join(ids)}" for kind, ids in wrong.items()) or "none"))
    if figures["set_errors"]:
        lines.append("SET ERRORS: " + "; ".join(figures["set_errors"]))
    if verbose:
        table = [(r["id"], r["kind"], "yes" if r["correct"] else "NO", "yes" if r["abstained"] else "", r["result_kind"],
                  json.dumps(r["filters"], ensure_ascii=False), f"{r['gold_cited']}/{r['gold']}", r["cited"],
                  r["outside"] if r["kind"] == "listing" else "", r["tolerated"] if r["kind"] == "listing" else "")
                 for r in figures["per_question"]]
        lines += ["", markdown_table(["id", "kind", "correct", "abstained", "result kind", "applied filters",
                                      "gold cited", "cited", "outside", "tolerated"], table)]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_index_arguments(parser, scifact=True)
    parser.add_argument("--set", type=Path, action="append", default=None,
                        help="labelled questions (JSON lines); repeatable (default: the 78 scholars questions)")
    parser.add_argument("--with-scifact", action="store_true",
                        help="index the SciFact corpus too (5,183 biomedical abstracts as distractors; needed by "
                             "sets whose gold papers are SciFact documents)")
    parser.add_argument("--half", choices=(TUNE, HELD_OUT), default=None, help="only the questions of this half")
    parser.add_argument("--scripted", action="store_true",
                        help="answer with the scripted model of bench/answers.py instead of extractively")
    parser.add_argument("--checks", action="store_true",
                        help="with --scripted: the model's field-terms query and relevance check before each answer")
    parser.add_argument("--model-checks", action="store_true",
                        help="with the endpoint of OPENAI_BASE_URL/OPENAI_API_KEY: the evidence after the model's "
                             "field-terms and relevance checks (retrieval.answers.chain.choose_evidence), no answer "
                             "written; also the share of gold records retrieved with and without the field terms")
    parser.add_argument("--k", type=int, default=8, help="evidence records per answer (Assistant.ask's default)")
    parser.add_argument("--verbose", action="store_true", help="per-question table")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args(argv)
    progress = start_scratch_run(args.out)

    from retrieval.assistant import Assistant

    sets = args.set or [DEFAULT_SET]
    questions = [q for path in sets for q in load_set(path) if args.half is None or q.half == args.half]
    owners = load_owners(args.data)
    scifact_ids: dict[str, str] = {}
    extra: list[Paper] = []
    if args.with_scifact:
        extra, back = scifact_papers(load_scifact(args.datasets))
        scifact_ids = {doc: record for record, doc in back.items()}
    index, settings, ingest = open_index(owners, args.reuse_index, progress, encoder=args.encoder, extra=extra, extra_name="scifact")
    endpoint = load_settings()
    settings = settings.model_copy(update={"openai_api_key": None, "openai_base_url": None,
                                           "llm_field_terms": args.checks, "llm_judge_relevance": args.checks})
    checks = ModelChecks(index, settings, endpoint, args.k) if args.model_checks else None
    records = list(index.iter_papers())
    corpus, mapped = load_corpus(index, records, owners)
    corpus.scifact = scifact_ids
    expected = {q.id: expected_for(corpus, q) for q in questions}
    set_errors = [f"{qid}: {e}" for qid, exp in expected.items() for e in exp.errors]
    if args.scripted:
        from bench.answers import ScriptedEvidenceModel

        assistant = Assistant(settings, index=index, chat_model=ScriptedEvidenceModel())
    else:
        assistant = Assistant(settings, index=index, chat_model=None)
    rows = []
    started = time.perf_counter()
    for q in questions:
        t0 = time.perf_counter()
        if checks is not None and q.kind != "listing":
            result, retrieved = checks.evidence(q)
            row = score(q, expected[q.id], result, time.perf_counter() - t0)
            row.update({key: bool(expected[q.id].gold & ids) for key, ids in retrieved.items()})
            progress(f"{q.set}/{q.id}: {'abstained' if result.abstained else f'{len(result.citations)} records'}, "
                     f"{row['seconds']:.0f} s {(result.notice or '')[:120]}")
        else:
            result = assistant.ask(q.question, k=args.k)
            row = score(q, expected[q.id], result, time.perf_counter() - t0)
        rows.append(row)
    progress(f"{len(questions)} questions answered in {time.perf_counter() - started:.1f} s")
    index.close()
    refs = [r for q in questions for r in q.gold]
    listing = [expected[q.id] for q in questions if q.kind == "listing"]
    figures = {
        "data": str(args.data), "set": [str(path) for path in sets], "with_scifact": args.with_scifact, "k": args.k, "questions": len(questions),
        "counts": dict(Counter(q.kind for q in questions)),
        "ingest": {key: ingest[key] for key in ("seconds", "records", "encoder", "reused") if key in ingest},
        "resolution": {"references": len(refs), "resolved": sum(resolve_or_none(corpus, r) is not None for r in refs),
                       "entries": len(corpus.entries), "mapped": dict(mapped),
                       "listing_gold": sum(len(e.gold) for e in listing),
                       "listing_tolerated": sum(len(e.tolerated) for e in listing)},
        "set_errors": set_errors,
        "goals": GOALS,
        "summary": summarise(rows),
        "halves": by_set_and_half(rows),
        "model_checks": checks.describe(rows) if checks is not None else None,
        "per_question": rows,
    }
    print(report(figures, args.verbose))
    if checks is not None:
        print("\n" + checks.table(figures["model_checks"]))
    if args.json is not None:
        write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
