"""A real model writes the answers to the development sets: per set and per tuning/held-out half.

    python bench/real_llm_sets.py --base-url http://127.0.0.1:8765/v1 [--model NAME] [--api-key KEY]
                                  [--set FILE ...] [--half tune|held-out] [--only ID,ID] [--with-scifact]
                                  [--timeout S] [--deadline S] [--max-tokens N] [--k 8]
                                  [--out DIR] [--reuse-index] [--verbose] [--json OUT]

The manual check of issue #29 (not CI: it needs a model server, e.g. the one
``../shared/tools/local-llm/`` starts). ``bench/real_llm.py`` watches a model on a few fixed
questions; this one asks it the labelled development sets of ``bench/answers_scholars.py``
(default ``bench/data/scholars_questions.jsonl``), whose gold papers say whether the written
answer cited the right record, over the same index (the 40 lists of ``scholars-real``, plus the
SciFact abstracts with ``--with-scifact``), through the product's own path
(``Assistant.stream_ask`` with the endpoint's chat model and the product's defaults, unless
``--timeout``/``--deadline``/``--max-tokens`` say otherwise). Each question is watched as
``bench.real_llm.run_question`` watches it: mode, seconds, the model's raw reply, what validation
kept, the word-overlap support of each kept cited sentence.

Per set and half (``bench.common.split_half``: fixed by a hash before any prompt was changed),
the measures of issue #29 and their goals on the held-out half:

* **written with gold**: answerable questions (topic, mixed) whose shown answer is the model's
  (mode ``llm``) and cites a gold record (goal ≥ 0.70);
* **false refusals**: answerable questions the model refused (its ``NO_ANSWER`` over evidence
  that passed the judgement, shown as the extractive fallback, or an abstention by the model's
  reply) (goal ≤ 0.10); the judgement's own abstentions are counted apart (no model was asked);
* **other fallbacks**: too slow, unreachable, unusable reply (the extractive answer shown);
* **unanswerable abstained** (by the judgement or by the model);
* **listings complete** (no model is asked);
* **median seconds** of the questions that called the model (goal: within the default limits);
* **citations**: citation marks of the shown answer naming none of its records (goal 0; those
  of the raw reply that validation removed in parentheses), and the share of kept
  cited sentences whose cited record is their best word-overlap match (``bench.real_llm``'s
  *supported*, a proxy).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.answers_scholars import DEFAULT_SET, Expected, expected_for, load_corpus, load_set
from bench.answers_scholars import Question as SetQuestion
from bench.common import (
    HELD_OUT,
    TUNE,
    load_note,
    load_scifact,
    markdown_table,
    scifact_papers,
    start_scratch_run,
    write_json,
)
from bench.people import add_index_arguments, load_owners, open_index
from bench.real_llm import Outcome, Question, Recorder, print_report, probe, run_question, summarise
from retrieval.answers.citations import cited_numbers
from retrieval.records.paper import Paper

GOALS = {"written_with_gold": 0.70, "false_refusals": 0.10, "invalid_citations": 0}


def judged(outcome: Outcome, q: SetQuestion, expected: Expected) -> dict[str, Any]:
    """One question's row: what the user was shown, judged against the question's gold."""
    answerable = q.kind in ("topic", "mixed")
    refused = outcome.fallback == "refused" or (outcome.abstained_by or "").startswith("model")
    gold_cited = bool(expected.gold & set(outcome.cited_ids))
    listing_complete = (q.kind == "listing" and outcome.mode != "abstained"
                        and expected.gold <= set(outcome.cited_ids)
                        and set(outcome.cited_ids) <= expected.gold | expected.tolerated)
    return {
        "id": q.id, "set": q.set, "half": q.half, "kind": q.kind, "mode": outcome.mode,
        "called_model": outcome.model_calls > 0, "seconds": outcome.seconds,
        "written": outcome.mode == "llm", "gold_cited": gold_cited,
        "written_with_gold": answerable and outcome.mode == "llm" and gold_cited,
        "refused": answerable and refused,
        "fallback": outcome.fallback if outcome.fallback != "refused" else None,
        "judgement_abstained": outcome.abstained_by == "evidence policy",
        "abstained": outcome.mode == "abstained",
        "listing_complete": listing_complete,
        "kept_sentences": len(outcome.checks), "supported": outcome.count("supported"),
        # marks of the shown answer that name none of its citations (validation's promise: none)
        "invalid_kept": sum(not 1 <= n <= len(outcome.cited_ids) for n in cited_numbers(outcome.answer))
        if outcome.mode == "llm" else 0,
        "invalid_removed": len(outcome.invalid_citations),  # in the raw reply, removed by validation
    }


def _share(rows: Sequence[dict[str, Any]], key: str) -> float | None:
    return sum(bool(r[key]) for r in rows) / len(rows) if rows else None


def by_half(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The measures of the module docstring, per set and half."""
    table = []
    for name in dict.fromkeys(r["set"] for r in rows):
        for half in (TUNE, HELD_OUT):
            mine = [r for r in rows if r["set"] == name and r["half"] == half]
            if not mine:
                continue
            answerable = [r for r in mine if r["kind"] in ("topic", "mixed")]
            unanswerable = [r for r in mine if r["kind"] == "unanswerable"]
            listing = [r for r in mine if r["kind"] == "listing"]
            called = [r["seconds"] for r in mine if r["called_model"]]
            kept = sum(r["kept_sentences"] for r in mine)
            table.append({
                "set": name, "half": half, "questions": len(mine), "answerable": len(answerable),
                "written_with_gold": _share(answerable, "written_with_gold"),
                "written": _share(answerable, "written"),
                "gold_cited_shown": _share(answerable, "gold_cited"),
                "false_refusals": _share(answerable, "refused"),
                "other_fallbacks": sum(bool(r["fallback"]) for r in answerable),
                "judgement_abstained": sum(r["judgement_abstained"] for r in answerable),
                "unanswerable": len(unanswerable), "unanswerable_abstained": _share(unanswerable, "abstained"),
                "listing": len(listing), "listing_complete": _share(listing, "listing_complete"),
                "model_questions": len(called),
                "median_seconds": round(statistics.median(called), 1) if called else None,
                "max_seconds": round(max(called), 1) if called else None,
                "kept_sentences": kept, "supported": sum(r["supported"] for r in mine),
                "invalid_kept": sum(r["invalid_kept"] for r in mine),
                "invalid_removed": sum(r["invalid_removed"] for r in mine),
            })
    return table


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def halves_table(table: Sequence[dict[str, Any]]) -> str:
    rows = [(h["set"], h["half"], h["answerable"], _f(h["written_with_gold"]), _f(h["written"]),
             _f(h["gold_cited_shown"]), _f(h["false_refusals"]), h["other_fallbacks"], h["judgement_abstained"],
             f"{_f(h['unanswerable_abstained'])} of {h['unanswerable']}",
             f"{_f(h['listing_complete'])} of {h['listing']}",
             f"{h['median_seconds']} / {h['max_seconds']} ({h['model_questions']})",
             f"{h['supported']}/{h['kept_sentences']}", f"{h['invalid_kept']} ({h['invalid_removed']})")
            for h in table]
    return markdown_table(["set", "half", "answerable", "written, gold cited", "written", "gold cited (shown)",
                           "false refusals", "other fallbacks", "judgement abstained", "unanswerable abstained",
                           "listings complete", "median / max s (model questions)", "supported / kept sentences",
                           "invalid citations kept (removed)"], rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="the OpenAI-compatible server, e.g. http://127.0.0.1:8765/v1")
    parser.add_argument("--model", default=None, help="model name to send (default: the first the server lists)")
    parser.add_argument("--api-key", default=None, help="the server's key, if it needs one")
    parser.add_argument("--set", type=Path, action="append", default=None,
                        help="labelled questions (JSON lines, bench/answers_scholars.py's format); repeatable")
    parser.add_argument("--half", choices=(TUNE, HELD_OUT), default=None, help="only the questions of this half")
    parser.add_argument("--only", default=None, help="comma-separated question ids")
    add_index_arguments(parser, scifact=True)
    parser.add_argument("--with-scifact", action="store_true", help="index the SciFact abstracts too")
    parser.add_argument("--k", type=int, default=8, help="evidence records per question (as `paperbot ask`)")
    parser.add_argument("--timeout", type=float, default=None, help="PAPERBOT_LLM_TIMEOUT (default: the product's)")
    parser.add_argument("--deadline", type=float, default=None, help="PAPERBOT_LLM_DEADLINE (default: the product's)")
    parser.add_argument("--max-tokens", type=int, default=None, help="PAPERBOT_LLM_MAX_TOKENS (default: the product's)")
    parser.add_argument("--verbose", action="store_true", help="per-question table and every raw reply")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args(argv)

    listed = probe(args.base_url, args.api_key)  # an absent server fails before anything heavy
    model = args.model or (listed[0] if listed else "local-model")
    progress = start_scratch_run(args.out)
    if not (args.data / "owners.json").exists():
        raise SystemExit(f"real_llm_sets: no scholars-real at {args.data} (pass --data DIR)")
    questions = [q for path in (args.set or [DEFAULT_SET]) for q in load_set(path)
                 if args.half is None or q.half == args.half]
    if args.only:
        ids = {part.strip() for part in args.only.split(",") if part.strip()}
        questions = [q for q in questions if q.id in ids]
    owners = load_owners(args.data)
    extra: list[Paper] = []
    scifact_ids: dict[str, str] = {}
    if args.with_scifact:
        extra, back = scifact_papers(load_scifact(args.datasets))
        scifact_ids = {doc: record for record, doc in back.items()}
    index, settings, info = open_index(owners, args.reuse_index, progress, encoder=args.encoder, extra=extra, extra_name="scifact")
    corpus, _ = load_corpus(index, list(index.iter_papers()), owners)
    corpus.scifact = scifact_ids
    expected = {q.id: expected_for(corpus, q) for q in questions}

    from retrieval.answers.llm import build_chat_model
    from retrieval.assistant import Assistant

    chosen = {"llm_timeout": args.timeout, "llm_deadline": args.deadline, "llm_max_tokens": args.max_tokens}
    settings = settings.model_copy(update={"openai_base_url": args.base_url, "openai_api_key": args.api_key,
                                           "llm_model": model,
                                           **{name: value for name, value in chosen.items() if value is not None}})
    recorder = Recorder()
    chat_model = build_chat_model(settings)
    assert chat_model is not None
    chat_model.callbacks = [recorder]
    assistant = Assistant(settings, index=index, chat_model=chat_model)

    outcomes, rows = [], []
    started = time.perf_counter()
    for n, q in enumerate(questions, start=1):
        outcome = run_question(assistant, recorder, Question(q.id, q.kind, q.question), args.k)
        row = judged(outcome, q, expected[q.id])
        outcomes.append(outcome)
        rows.append(row)
        verdict = "written, gold cited" if row["written_with_gold"] else outcome.mode
        progress(f"[{n}/{len(questions)}] {q.set}/{q.id} ({q.half}): {verdict}"
                 f"{f' ({outcome.fallback}: {outcome.fallback_reason})' if outcome.fallback else ''}"
                 f" in {outcome.seconds:.1f} s")
    index.close()
    table = by_half(rows)
    host = f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores; {load_note()}"
    print(f"model {model} at {args.base_url} ({host}); {info['records']:,} records; "
          f"timeout {settings.llm_timeout:g} s, deadline {settings.llm_deadline:g} s, "
          f"max tokens {settings.llm_max_tokens}, prompt budget {settings.llm_prompt_budget}, k {args.k}; "
          f"{len(questions)} questions in {time.perf_counter() - started:.0f} s\n")
    print(halves_table(table))
    if args.verbose:
        print()
        print_report(outcomes, summarise(outcomes), verbose=True)
    if args.json is not None:
        payload = {"base_url": args.base_url, "model": model, "host": host, "goals": GOALS,
                   "settings": {name: getattr(settings, name) for name in
                                ("llm_timeout", "llm_deadline", "llm_max_tokens", "llm_prompt_budget")},
                   "halves": table, "rows": rows, "questions": [asdict(o) for o in outcomes]}
        write_json(args.json, payload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
