"""Prompt sizes before and after the prompt budget, on the project's development questions.

    python bench/prompt_sizes.py [--data DIR] [--set FILE] [--with-scifact] [--reuse-index]
                                 [--budget N] [--k 8] [--no-summaries] [--dump OUT.jsonl] [--json OUT]

Each question of the sets (default ``bench/data/scholars_questions.jsonl``) is asked through the
product (``Assistant.ask``, k = 8) twice, with a recording chat model that answers NO_ANSWER at
once: with the budget lifted (``--budget`` 200,000: the prompt as it was before the budget, every
evidence record with its abstract cut to its share of the 9,000-character abstract budget) and
with ``--budget`` (default: the setting's default). Questions that send no prompt (abstained by
the evidence judgement, listings) are counted apart. With summaries (the default), each of the 40
scholars of ``scholars-real`` is summarized both ways too (``Assistant.scholars.summarize``: the theme
prompt). The index is the one ``bench/answers_scholars.py`` builds (``bench.people.open_index``).

Reported per kind of prompt: prompts sent, tokens (median, 90th percentile, largest) before and
after, prompts over the budget, evidence records shown (mean). Tokens are counted as the product
counts them without a server tokenizer (``prompt_tokens.WordPieceCounter``); characters are given
too. ``--dump`` writes every prompt (both ways) as JSON lines, to be counted with a model's own
tokenizer outside this script (docs/performance.md did so with Qwen2.5's).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench.common`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from bench.answers_scholars import DEFAULT_SET, load_set
from bench.common import load_scifact, scifact_papers, start_scratch_run
from bench.people import add_index_arguments, load_owners, open_index
from retrieval.answers.prompt_tokens import WordPieceCounter
from retrieval.config import Settings
from retrieval.records.paper import Paper

UNLIMITED = 200_000


class RecordingModel(BaseChatModel):
    """Keeps every prompt (its messages joined) and answers ``reply`` at once."""

    reply: str = "NO_ANSWER"
    prompts: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recording"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        self.prompts.append("\n".join(str(message.content) for message in messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.reply))])


def _prompt_of(model: RecordingModel, before: int) -> str | None:
    return model.prompts[-1] if len(model.prompts) > before else None


def measure(settings: Settings, index: Any, questions: Sequence[Any], owners: Sequence[Any], budget: int, k: int,
            summaries: bool) -> list[dict[str, Any]]:
    """One row per question (and scholar): the prompt sent with the budget lifted, then with ``budget``."""
    from retrieval.assistant import Assistant

    rows: list[dict[str, Any]] = []
    runs = {}
    for name, limit in (("before", UNLIMITED), ("after", budget)):
        model = RecordingModel()
        runs[name] = (Assistant(settings.model_copy(update={"llm_prompt_budget": limit}), index=index,
                                chat_model=model), model)
    for q in questions:
        row: dict[str, Any] = {"id": q.id, "set": q.set, "kind": "answer", "question": q.question}
        for name, (assistant, model) in runs.items():
            seen = len(model.prompts)
            assistant.ask(q.question, k=k)
            row[name] = _prompt_of(model, seen)
        rows.append(row)
    for owner in owners if summaries else ():
        row = {"id": owner.slug, "set": "scholars-real", "kind": "summary", "question": owner.name}
        for name, (assistant, model) in runs.items():
            model.reply = ""
            seen = len(model.prompts)
            assistant.scholars.summarize(owner.name)
            row[name] = _prompt_of(model, seen)
        rows.append(row)
    return rows


def _records(prompt: str) -> int:
    return prompt.count(" RECORD [") - prompt.count(" END RECORD [")


def summarise(rows: Sequence[dict[str, Any]], budget: int) -> dict[str, Any]:
    """Per kind of prompt: counts, token quantiles before and after, records shown."""
    out: dict[str, Any] = {}
    counter = WordPieceCounter()
    for kind in ("answer", "summary"):
        mine = [r for r in rows if r["kind"] == kind]
        sent = [r for r in mine if r["before"] and r["after"]]
        if not mine:
            continue
        figures: dict[str, Any] = {"asked": len(mine), "prompts": len(sent)}
        for name in ("before", "after"):
            tokens = sorted(counter.count(r[name]) for r in sent)
            if not tokens:
                continue
            figures[name] = {
                "median": int(statistics.median(tokens)),
                "p90": tokens[min(len(tokens) - 1, int(0.9 * len(tokens)))],
                "max": tokens[-1],
                "over_budget": sum(t > budget for t in tokens),
                "records_mean": round(statistics.mean(_records(r[name]) for r in sent), 1),
                "chars_median": int(statistics.median(len(r[name]) for r in sent)),
            }
        out[kind] = figures
    return out


def table(summary: dict[str, Any], budget: int) -> str:
    lines = [f"| prompt | sent / asked | tokens before: median / p90 / max | after (budget {budget:,}) | "
             "over budget before -> after | records shown before -> after |", "|---|---:|---:|---:|---:|---:|"]
    for kind, f in summary.items():
        if "before" not in f:
            continue
        b, a = f["before"], f["after"]
        lines.append(f"| {kind} | {f['prompts']} / {f['asked']} | {b['median']:,} / {b['p90']:,} / {b['max']:,} | "
                     f"{a['median']:,} / {a['p90']:,} / {a['max']:,} | {b['over_budget']} -> {a['over_budget']} | "
                     f"{b['records_mean']} -> {a['records_mean']} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_index_arguments(parser, scifact=True)
    parser.add_argument("--set", type=Path, action="append", default=None, help="question sets (JSON lines)")
    parser.add_argument("--with-scifact", action="store_true", help="index the SciFact corpus too (as answers_scholars)")
    parser.add_argument("--budget", type=int, default=None, help="PAPERBOT_LLM_PROMPT_BUDGET (default: the product's)")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--no-summaries", action="store_true", help="questions only, no scholar summaries")
    parser.add_argument("--dump", type=Path, default=None, help="write every prompt as JSON lines")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args(argv)
    progress = start_scratch_run(args.out)

    owners = load_owners(args.data)
    extra: list[Paper] = []
    if args.with_scifact:
        extra, _ = scifact_papers(load_scifact(args.datasets))
    index, settings, _ = open_index(owners, args.reuse_index, progress, encoder=args.encoder, extra=extra, extra_name="scifact")
    settings = settings.model_copy(update={"openai_api_key": None, "openai_base_url": None,
                                           "llm_field_terms": False, "llm_judge_relevance": False})
    budget = args.budget or settings.llm_prompt_budget
    questions = [q for path in args.set or [DEFAULT_SET] for q in load_set(path)]
    rows = measure(settings, index, questions, owners, budget, args.k, not args.no_summaries)
    index.close()
    summary = summarise(rows, budget)
    print(table(summary, budget))
    if args.dump is not None:
        args.dump.parent.mkdir(parents=True, exist_ok=True)
        args.dump.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"budget": budget, "k": args.k, "summary": summary}, indent=1),
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
