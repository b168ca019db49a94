"""Benchmark the cited-answer chain: citation precision, uncited claims, abstention, added latency.

    python bench/answers.py [--quick] [--data ../shared/datasets] [--retriever bm25|index] [--no-endpoint]

Questions: SciFact test claims with relevance judgements (answerable) and a fixed list of
questions the biomedical SciFact corpus does not cover (unanswerable). Modes:

* ``extractive``: no model;
* ``llm-scripted``: a scripted fake model that cites the evidence it is shown and injects
  defects at fixed rates (30% an uncited sentence, 20% an invented key, 10% declines), so the
  numbers show what validation removes. This measures our chain, not a model;
* ``llm-endpoint``: the configured OpenAI-compatible endpoint, when OPENAI_API_KEY or
  OPENAI_BASE_URL is set (skip with ``--no-endpoint``).

Retrieval: ``bm25`` (default) is a stand-in over the SciFact corpus while the real index is
being built (bm25s, English stemmer; score = BM25 / the query's attainable BM25, in 0..1, see
``Bm25StandIn``); ``index`` uses
``retrieval.index.paper_index.PaperIndex.open(settings).search(query, k=k, filters=None)`` over whatever the
configured data directory holds (ingest SciFact into it first; gold records are matched by
normalised title), with the index's own ``relevance_threshold`` when it has one.

Columns: ``prec raw`` = citation numbers in the model's raw text that point to evidence;
``prec final`` = cited records that exist and were retrieved for that question;
``uncited raw`` = claim sentences the model wrote without a valid citation (dropped by
validation); ``uncited final`` = claim sentences without a citation in the final answers;
``gold`` = answered answerable questions citing at least one judged-relevant record;
``abstain unans`` = abstentions on unanswerable questions; ``added ms`` = p50/p95 of the
answer time minus the retrieval time for the same question.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import random
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # runnable as a plain script
    sys.path.insert(0, str(REPO))

from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402

from retrieval.answers.chain import AnswerOptions, EvidenceContext, Retriever, stream_answer  # noqa: E402
from retrieval.answers.citations import split_sentences  # noqa: E402
from retrieval.answers.evidence import Rarity, resolve_min_relevance, resolve_policy  # noqa: E402
from retrieval.answers.llm import build_chat_model  # noqa: E402
from retrieval.config import Settings, load_settings  # noqa: E402
from retrieval.index.background import Background  # noqa: E402
from retrieval.records.paper import Paper, title_key  # noqa: E402
from retrieval.results import AnswerResult, Final, SearchFilters, SearchHit  # noqa: E402
from retrieval.text import content_terms  # noqa: E402

UNANSWERABLE = [
    "Which papers propose a compiler for quantum circuits?",
    "What reinforcement learning methods play the game of Go?",
    "Which papers measure the dark matter content of dwarf galaxies?",
    "What are the best sourdough fermentation techniques?",
    "Which papers analyse stock market volatility with GARCH models?",
    "How does the discrete dipole approximation converge for large particles?",
    "Which papers describe Byzantine fault tolerant consensus protocols?",
    "What is the tensile strength of carbon fibre reinforced concrete?",
    "Which papers study the migration routes of monarch butterflies?",
    "How are graph neural networks used for traffic forecasting?",
    "Which papers propose lattice Boltzmann methods for turbulent flow?",
    "What archaeological evidence dates the first Roman aqueducts?",
    "Which papers evaluate BM25 against dense retrievers for code search?",
    "How do transformers handle long documents in machine translation?",
    "Which papers study the aerodynamics of bumblebee flight?",
]


@dataclass(frozen=True)
class Case:
    question: str
    gold: frozenset[str]  # title keys of judged-relevant records; empty = unanswerable


# --- data ------------------------------------------------------------------------------------


def load_scifact(data_dir: Path, n_answerable: int) -> tuple[list[Paper], list[Case]]:
    root = data_dir / "scifact"
    if not (root / "corpus.jsonl.gz").exists():
        raise SystemExit(f"SciFact not found under {root}: pass --data DIR (the folder holding scifact/).")
    papers: list[Paper] = []
    key_by_doc: dict[str, str] = {}
    with gzip.open(root / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if not row.get("title", "").strip():
                continue
            paper = Paper(title=row["title"], abstract=row.get("text") or None)
            papers.append(paper)
            key_by_doc[row["_id"]] = title_key(paper.title)
    queries = {}
    for line in (root / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        queries[row["_id"]] = row["text"]
    gold: dict[str, set[str]] = {}
    for line in (root / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, score = line.split("\t")
        if int(score) > 0 and doc in key_by_doc:
            gold.setdefault(qid, set()).add(key_by_doc[doc])
    cases = [Case(queries[qid], frozenset(keys)) for qid, keys in sorted(gold.items(), key=lambda x: int(x[0]))]
    return papers, cases[:n_answerable]


# --- retrieval -------------------------------------------------------------------------------


class Bm25StandIn:
    """BM25 over the corpus, scored 0..1 as the share of the query's attainable BM25 mass.

    bm25s' Lucene BM25 gives each query term at most its idf, so score / sum(idf of the query's
    terms) is in 0..1; a term the corpus never uses counts with the largest idf (it cannot be
    matched, which is exactly what an off-topic question looks like).
    """

    def __init__(self, papers: Sequence[Paper]) -> None:
        import bm25s
        import Stemmer

        self._bm25s = bm25s
        self._stemmer = Stemmer.Stemmer("english")
        self.papers = list(papers)
        tokens = bm25s.tokenize([p.embedding_text for p in self.papers], stopwords="en",
                                stemmer=self._stemmer, show_progress=False)
        self._index = bm25s.BM25()
        self._index.index(tokens, show_progress=False)

    def _idf(self, token: str) -> float:
        n = len(self.papers)
        token_id = self._index.vocab_dict.get(token)
        indptr = self._index.scores["indptr"]
        df = 0 if token_id is None else int(indptr[token_id + 1] - indptr[token_id])
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def __call__(self, query: str, k: int, filters: SearchFilters | None) -> list[SearchHit]:
        tokens = self._bm25s.tokenize([query], stopwords="en", stemmer=self._stemmer,
                                      return_ids=False, show_progress=False)
        if not tokens[0]:
            return []
        mass = sum(self._idf(t) for t in set(tokens[0]))
        docs, scores = self._index.retrieve(tokens, k=k, show_progress=False)
        return [
            SearchHit(paper=self.papers[int(d)], score=min(1.0, float(s) / mass), lexical_score=float(s))
            for d, s in zip(docs[0], scores[0], strict=True)
            if s > 0
        ]


def index_retriever(papers: Sequence[Paper]) -> tuple[Retriever, Rarity, Background]:
    """The real ``PaperIndex`` over the same records (``--retriever index``), its word rarity and
    its background figures (the evidence judgement's per-index inputs, as the doors pass them).

    A scratch index under ``bench/out/answers-*``, built once; vectors come from the embedding
    cache the retrieval benchmarks share, so only a cold cache encodes anything.
    """
    from bench.common import shared_cache_dir
    from bench.retrieval_quality import build_index, make_encoder
    from retrieval.index.embedding_cache import EmbeddingCache, default_cache_path

    encoder = make_encoder("auto")
    cache = EmbeddingCache(default_cache_path(shared_cache_dir()))
    index = build_index(f"{len(papers)}-{encoder.name.replace('/', '_')}", papers, encoder, cache, bench="answers")

    def search(query: str, k: int, filters: SearchFilters | None) -> list[SearchHit]:
        return index.search(query, k=k, filters=filters)

    return search, index.term_rarity, index.evidence_background()


@dataclass
class TimedRetriever:
    inner: Retriever
    seconds: float = 0.0
    hits: list[SearchHit] = field(default_factory=list)

    def __call__(self, query: str, k: int, filters: SearchFilters | None) -> list[SearchHit]:
        start = time.perf_counter()
        hits = self.inner(query, k, filters)
        self.seconds += time.perf_counter() - start
        self.hits.extend(hits)
        return hits


# --- scripted model --------------------------------------------------------------------------

_RECORD = re.compile(r"^(@@PB-[0-9A-F]+@@) RECORD \[(\d+)\]\n(?:id: [^\n]*\n)?title: ([^\n]*)$", re.M)
_QUESTION = re.compile(r"QUESTION\n(.*?)\n@@PB-", re.S)


class ScriptedEvidenceModel(BaseChatModel):
    """Cites up to three of the records it is shown; injects defects at fixed, seeded rates.

    Asked for the field's terms it repeats the question (it knows no field); asked which records
    are relevant it names those whose title shares a content word with the question, else NONE:
    a lexical stand-in that exercises the chain's checks, not a judgement of meaning.
    """

    uncited_rate: float = 0.3
    invented_rate: float = 0.2
    decline_rate: float = 0.1

    @property
    def _llm_type(self) -> str:
        return "scripted-evidence"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        prompt = messages[-1].text
        question = _QUESTION.search(prompt)
        seed = hashlib.sha1((question.group(1) if question else prompt).encode()).hexdigest()
        rng = random.Random(seed)
        records = [(int(m.group(2)), m.group(3)) for m in _RECORD.finditer(prompt)]
        if "in the technical terms" in prompt:  # the field-terms prompt: no vocabulary to bridge with
            return _reply(question.group(1) if question else "")
        if "which research paper records are about a question" in prompt:  # the relevance check
            asked = content_terms(question.group(1) if question else "")
            named = [str(n) for n, title in records if asked & content_terms(title)]
            return _reply(", ".join(named) or "NONE")
        if not records:  # the follow-up rewrite prompt: echo the follow-up as the query
            follow = re.search(r"FOLLOW-UP\n(.*?)\n@@PB-", prompt, re.S)
            return _reply(follow.group(1) if follow else "")
        if rng.random() < self.decline_rate:
            return _reply("NO_ANSWER")
        sentences = [f"{title.rstrip('.')} is relevant here [{n}]." for n, title in records[:3]]
        if rng.random() < self.uncited_rate:
            sentences.insert(1, "This finding is widely accepted.")
        if rng.random() < self.invented_rate:
            sentences.append(f"A further study agrees [{len(records) + 4}].")
        return _reply(" ".join(sentences))


def _reply(text: str) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


# --- measuring -------------------------------------------------------------------------------


@dataclass
class Tally:
    answerable: int = 0
    answered: int = 0
    gold_cited: int = 0
    unanswerable: int = 0
    abstained_unanswerable: int = 0
    raw_citations: int = 0
    raw_valid: int = 0
    raw_claims: int = 0
    raw_uncited: int = 0
    final_cited: int = 0
    final_cited_retrieved: int = 0
    final_claims: int = 0
    final_uncited: int = 0
    added_ms: list[float] = field(default_factory=list)
    notices: dict[str, int] = field(default_factory=dict)


def final_claims(answer: str) -> tuple[int, int]:
    """(claim sentences, claim sentences without a citation) of a final answer."""
    claims = uncited = 0
    for line in answer.splitlines():
        for sentence in split_sentences(re.sub(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+", "", line)):
            if not re.search(r"[A-Za-z]{2,}", sentence) or sentence.rstrip().endswith(":"):
                continue
            claims += 1
            uncited += not re.search(r"\[\d+\]", sentence)
    return claims, uncited


def run_one(case: Case, retriever: TimedRetriever, settings: Settings, model: BaseChatModel | None,
            threshold: float | None, k: int, tally: Tally, rarity: Rarity | None = None,
            background: Background | None = None) -> None:
    retriever.seconds, retriever.hits = 0.0, []
    start = time.perf_counter()
    options = AnswerOptions(k=k, evidence=EvidenceContext(resolve_policy(settings, threshold), rarity, background))
    events = list(stream_answer(case.question, retriever=retriever, settings=settings, chat_model=model,
                                options=options))
    total = time.perf_counter() - start
    final = events[-1]
    assert isinstance(final, Final)
    result: AnswerResult = final.result
    tally.added_ms.append((total - retriever.seconds) * 1000)
    if result.notice:
        tally.notices[result.notice] = tally.notices.get(result.notice, 0) + 1
    if final.report is not None:
        tally.raw_citations += final.report.raw_citations
        tally.raw_valid += final.report.raw_citations - len(final.report.invalid_citations)
        uncited = sum(1 for d in final.report.dropped if d.reason != "prompt leak")
        tally.raw_claims += final.report.kept_sentences + uncited
        tally.raw_uncited += uncited
    retrieved = {hit.paper.id for hit in retriever.hits}
    tally.final_cited += len(result.citations)
    tally.final_cited_retrieved += sum(1 for c in result.citations if c.id in retrieved)
    if not result.abstained:
        claims, uncited = final_claims(result.answer)
        tally.final_claims += claims
        tally.final_uncited += uncited
    if case.gold:
        tally.answerable += 1
        if not result.abstained:
            tally.answered += 1
            tally.gold_cited += any(title_key(c.title) in case.gold for c in result.citations)
    else:
        tally.unanswerable += 1
        tally.abstained_unanswerable += result.abstained


def _ratio(num: int, den: int) -> str:
    return f"{num / den:.2f}" if den else "  -"


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def print_table(rows: list[tuple[str, Tally]]) -> None:
    header = ["mode", "answered", "gold", "prec raw", "prec final", "uncited raw", "uncited final",
              "abstain unans", "added ms p50/p95"]
    lines = [header]
    for name, t in rows:
        lines.append([
            name,
            f"{_ratio(t.answered, t.answerable)} ({t.answered}/{t.answerable})",
            _ratio(t.gold_cited, t.answered),
            _ratio(t.raw_valid, t.raw_citations),
            _ratio(t.final_cited_retrieved, t.final_cited),
            _ratio(t.raw_uncited, t.raw_claims),
            _ratio(t.final_uncited, t.final_claims),
            f"{_ratio(t.abstained_unanswerable, t.unanswerable)} ({t.abstained_unanswerable}/{t.unanswerable})",
            f"{statistics.median(t.added_ms) if t.added_ms else 0:.1f}/{_pct(t.added_ms, 0.95):.1f}",
        ])
    widths = [max(len(str(row[i])) for row in lines) for i in range(len(header))]
    for i, row in enumerate(lines):
        print("  ".join(str(cell).ljust(widths[j]) for j, cell in enumerate(row)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    for name, t in rows:
        for notice, count in t.notices.items():
            print(f"[{name}] {count}x {notice}")


def modes(settings: Settings, use_endpoint: bool) -> Iterator[tuple[str, Callable[[], BaseChatModel | None]]]:
    yield "extractive", lambda: None
    yield "llm-scripted", ScriptedEvidenceModel
    if use_endpoint and settings.llm_configured:
        yield f"llm-endpoint ({settings.llm_model})", lambda: build_chat_model(settings)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 answerable + 8 unanswerable questions")
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "datasets",
                        help="folder holding scifact/ (default: ../shared/datasets)")
    parser.add_argument("--retriever", choices=["bm25", "index"], default="bm25")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--no-endpoint", action="store_true", help="skip the configured LLM endpoint")
    parser.add_argument("--min-relevance", type=float, default=None,
                        help="relevance threshold (default: the index's, else PAPERBOT_MIN_RELEVANCE, else "
                             "retrieval.answers.evidence.DEFAULT_MIN_RELEVANCE)")
    parser.add_argument("--checks", action="store_true",
                        help="the model's field-terms query and relevance check before each answer (off by default)")
    parser.add_argument("--sweep", action="store_true",
                        help="also print answered/abstained rates of extractive answers for a range of thresholds")
    args = parser.parse_args(argv)

    n_answerable, n_unanswerable = (20, 8) if args.quick else (100, len(UNANSWERABLE))
    settings = load_settings()
    checks = {"llm_field_terms": True, "llm_judge_relevance": True} if args.checks else {}
    settings = settings.model_copy(update=checks)
    base_settings = settings.model_copy(update={"openai_api_key": None, "openai_base_url": None})
    start = time.perf_counter()
    papers, cases = load_scifact(args.data, n_answerable)
    cases += [Case(q, frozenset()) for q in UNANSWERABLE[:n_unanswerable]]
    threshold: float | None = None
    rarity: Rarity | None = None
    background: Background | None = None
    if args.retriever == "index":
        inner, rarity, background = index_retriever(papers)
    else:
        inner = Bm25StandIn(papers)
    if args.min_relevance is not None:
        threshold = args.min_relevance
    shown: object = threshold if threshold is not None else (
        "the evidence judgement" if args.retriever == "index" else resolve_min_relevance(settings))
    print(f"{len(cases)} questions ({n_answerable} answerable), {len(papers)} records, retriever={args.retriever}, "
          f"k={args.k}, min_relevance={shown}, setup {time.perf_counter() - start:.1f}s")
    rows = []
    for name, make_model in modes(settings, not args.no_endpoint):
        tally = Tally()
        retriever = TimedRetriever(inner)
        run_settings = settings if name.startswith("llm-endpoint") else base_settings
        for case in cases:
            run_one(case, retriever, run_settings, make_model(), threshold, args.k, tally, rarity, background)
        rows.append((name, tally))
    print()
    print_table(rows)
    if args.sweep:
        print()
        sweep(cases, inner, base_settings, args.k)
    return 0


def sweep(cases: Sequence[Case], inner: Retriever, settings: Settings, k: int) -> None:
    """Answered (answerable) and abstained (unanswerable) rates of extractive answers per threshold."""
    print("min_relevance  answered  abstain unans")
    for threshold in (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5):
        tally = Tally()
        for case in cases:
            run_one(case, TimedRetriever(inner), settings, None, threshold, k, tally)
        print(f"{threshold:<13}  {_ratio(tally.answered, tally.answerable):<8}  "
              f"{_ratio(tally.abstained_unanswerable, tally.unanswerable)}")


if __name__ == "__main__":
    raise SystemExit(main())
