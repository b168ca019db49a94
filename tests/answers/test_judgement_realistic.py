"""The evidence judgement on a realistic index: the 40 real publication lists among 3,000 unrelated
SciFact abstracts, through ``Assistant.ask`` as both doors call it.

The questions of issue #28 that the word rules got wrong, and the *held-out* halves of the
paraphrase and near-miss development sets (``bench.common.split_half``; the weights were fitted
on the tuning halves only, ``bench/fit_judgement.py``). The floors asserted sit under the figures
measured over the full 6,808-record index (docs/performance.md: paraphrases 0.41 with a gold
record cited, near misses 0.91 abstained) and well above the word rules' (0.16 and 0.68).

Reads ``../shared/datasets`` at run time (never copied); skipped, with the reason, without it.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.answers_scholars import load_corpus, load_set
from bench.common import HELD_OUT, load_scifact, scifact_papers
from bench.people import load_owners
from retrieval.assistant import Assistant
from retrieval.config import Settings
from retrieval.index.paper_index import PaperIndex

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DATASETS = REPO.parent / "shared" / "datasets"
SETS = REPO / "bench" / "data"
UNRELATED = 3000

needs_data = pytest.mark.skipif(not (DATASETS / "scholars-real" / "owners.json").exists()
                                or not (DATASETS / "scifact" / "corpus.jsonl.gz").exists(),
                                reason=f"scholars-real and SciFact not found under {DATASETS}")


@pytest.fixture(scope="module")
def realistic(tmp_path_factory: pytest.TempPathFactory, fp32_onnx_encoder) -> Iterator[tuple[Assistant, dict]]:
    """An assistant over the 40 lists + 3,000 SciFact abstracts (every SciFact gold document of
    the paraphrase set among them), and a resolver of gold references to record ids; embedded by
    the float32 ONNX export (the reference vectors, several times faster than torch here)."""
    owners = load_owners(DATASETS / "scholars-real")
    scifact = load_scifact(DATASETS)
    papers, back = scifact_papers(scifact)
    record_of_doc = {doc: record for record, doc in back.items()}
    gold_docs = {ref["scifact"] for q in load_set(SETS / "paraphrase_questions.jsonl") for ref in q.gold
                 if "scifact" in ref}
    chosen = {record_of_doc[doc] for doc in gold_docs}
    others = sorted(paper.id for paper in papers if paper.id not in chosen)
    chosen |= set(random.Random(28).sample(others, UNRELATED - len(chosen)))
    settings = Settings(_env_file=None, data_dir=tmp_path_factory.mktemp("realistic"), openai_api_key=None,
                        openai_base_url=None, min_relevance=None)
    index = PaperIndex.open(settings, encoder=fp32_onnx_encoder)
    assistant = Assistant(settings, index=index, chat_model=None)
    assistant.library.ingest_files([owner.path for owner in owners])
    assistant.library.ingest_papers([paper for paper in papers if paper.id in chosen])
    corpus, _ = load_corpus(index, list(index.iter_papers()), owners)
    corpus.scifact = {doc: record for doc, record in record_of_doc.items() if record in chosen}
    yield assistant, {"resolve": corpus.resolve}
    index.close()


@needs_data
def test_a_paraphrase_of_a_title_is_answered_with_it(realistic) -> None:
    assistant, _ = realistic
    result = assistant.ask("which papers make mixture-of-experts inference faster on multiple GPUs?")
    assert not result.abstained
    assert any(c.title.startswith("HarMoEny") for c in result.citations), [c.title for c in result.citations]


@needs_data
@pytest.mark.parametrize(("question", "missing"), [
    ("which papers propose checkpointing for LLM fine-tuning?", "checkpointing"),
    ("What are the known results on quantum error correction with surface codes?", "surface codes"),
])
def test_a_near_miss_abstains_and_says_why(realistic, question: str, missing: str) -> None:
    assistant, _ = realistic
    result = assistant.ask(question)
    assert result.abstained, [c.title for c in result.citations]
    assert f"'{missing}'" in (result.notice or ""), result.notice


@needs_data
def test_held_out_paraphrases_are_answered_with_a_gold_record(realistic) -> None:
    assistant, refs = realistic
    held = [q for q in load_set(SETS / "paraphrase_questions.jsonl") if q.half == HELD_OUT]
    cited = 0
    for q in held:
        gold = {refs["resolve"](ref) for ref in q.gold}
        result = assistant.ask(q.question)
        cited += not result.abstained and bool(gold & {c.id for c in result.citations})
    assert cited / len(held) >= 0.30, f"{cited} of {len(held)}"


@needs_data
def test_held_out_near_misses_abstain(realistic) -> None:
    assistant, _ = realistic
    held = [q for q in load_set(SETS / "near_miss_questions.jsonl") if q.half == HELD_OUT]
    answered = [q.id for q in held if not assistant.ask(q.question).abstained]
    assert (len(held) - len(answered)) / len(held) >= 0.85, answered
