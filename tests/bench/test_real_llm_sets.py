"""``bench/real_llm_sets.py``'s judging of what a real model's answers showed, on made-up outcomes
(the run itself needs a model server: manual, docs/performance.md)."""

from __future__ import annotations

from bench.answers_scholars import Expected, Question
from bench.common import HELD_OUT, TUNE, split_half
from bench.real_llm import Outcome
from bench.real_llm_sets import by_half, judged


def _question(kind: str, half: str) -> Question:
    n = 0
    while True:  # an id whose hash puts it in the wanted half
        qid = f"{kind[0]}{n}"
        if split_half("set", qid) == half:
            return Question(qid, kind, "a question", {}, [], "set")
        n += 1


def _outcome(mode: str, cited: list[str], *, fallback: str | None = None, abstained_by: str | None = None,
             calls: int = 1, seconds: float = 10.0) -> Outcome:
    return Outcome("x", "topic", "a question", mode, seconds, model_calls=calls, fallback=fallback,
                   abstained_by=abstained_by, cited_ids=cited)


def test_a_written_answer_citing_gold_counts_and_a_refusal_is_told_apart_from_the_judgements() -> None:
    gold = Expected({"g1"}, set())
    written = judged(_outcome("llm", ["x", "g1"]), _question("topic", HELD_OUT), gold)
    assert written["written_with_gold"] and not written["refused"]
    refused = judged(_outcome("fallback", ["g1"], fallback="refused"), _question("topic", HELD_OUT), gold)
    assert refused["refused"] and not refused["written_with_gold"] and refused["gold_cited"]
    by_policy = judged(_outcome("abstained", [], abstained_by="evidence policy", calls=0),
                       _question("mixed", HELD_OUT), gold)
    assert by_policy["judgement_abstained"] and not by_policy["refused"]
    wrong = judged(_outcome("llm", ["x"]), _question("topic", HELD_OUT), gold)
    assert wrong["written"] and not wrong["written_with_gold"]


def test_halves_are_reported_apart_with_the_model_questions_median() -> None:
    gold = Expected({"g1"}, set())
    rows = [judged(_outcome("llm", ["g1"], seconds=30.0), _question("topic", HELD_OUT), gold),
            judged(_outcome("fallback", [], fallback="refused", seconds=50.0), _question("topic", HELD_OUT), gold),
            judged(_outcome("abstained", [], abstained_by="evidence policy", calls=0, seconds=0.1),
                   _question("unanswerable", HELD_OUT), Expected(set(), set())),
            judged(_outcome("listing", ["g1"], calls=0), _question("listing", TUNE), gold)]
    table = {h["half"]: h for h in by_half(rows)}
    held = table[HELD_OUT]
    assert (held["answerable"], held["written_with_gold"], held["false_refusals"]) == (2, 0.5, 0.5)
    assert held["unanswerable_abstained"] == 1.0 and held["median_seconds"] == 40.0 and held["model_questions"] == 2
    assert table[TUNE]["listing_complete"] == 1.0 and table[TUNE]["model_questions"] == 0
