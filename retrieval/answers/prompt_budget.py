"""A prompt budget in tokens: the evidence a prompt carries, fitted to what the model reads in time.

A small local model reads a few dozen prompt tokens a second (the 1.5B model of issue #29: 35 a
second on two idle cores), so the prompt's size decides the wait for the first token.
``fit_evidence`` fits an ``EvidenceSet`` so that the whole prompt (the ``fixed`` text: system
prompt, instructions, question; plus the records' blocks) holds at most ``budget`` tokens by
``counter``, taking these steps in order and stopping as soon as it fits:

1. every record with its abstract as ``EvidenceSet.render`` shows it (unchanged when it fits);
2. each abstract trimmed to its sentences that share a content term with the record's *focus*
   (the question; for a summary, the label of the paper's theme), in their order; an abstract
   none of whose sentences match keeps its first sentence (it usually says what the paper is);
3. records dropped from the last (retriever order is best first), those that add nothing
   first (title and kept sentences share no content term with the focus), never the first; or
   in the order the caller gives (a summary drops each theme's later papers first and keeps
   every theme's first);
4. the kept abstracts cut at a word, all to one length, down to none: title, authors, year and
   venue always stay.

``FittedEvidence`` says what was done (tokens before and after, abstracts trimmed, records
dropped) for reports and ``bench/prompt_sizes.py``. A prompt whose fixed part alone passes the
budget is sent as small as step 4 makes it: the budget is a target, not a refusal.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from retrieval.answers.citations import split_sentences
from retrieval.answers.evidence import EvidenceSet, cut_at_word, looks_like_instruction, neutralise
from retrieval.answers.prompt_tokens import TokenCounter
from retrieval.results import SearchHit
from retrieval.text import content_terms

#: Blank lines between blocks and the message framing a chat template adds per message, in tokens.
JOIN_TOKENS = 2
#: Shortest cut of an abstract (step 4) worth keeping; shorter ones are dropped to none.
MIN_ABSTRACT_CHARS = 80


@dataclass(frozen=True)
class FittedEvidence:
    """The evidence as fitted, and what fitting did (module docstring)."""

    evidence: EvidenceSet
    tokens_before: int
    tokens: int
    trimmed: int  # abstracts cut to their matching sentences (step 2) or shorter (step 4)
    dropped: int  # records left out (step 3)

    @property
    def fits(self) -> bool:
        """Whether nothing had to change: the prompt was within the budget as it was."""
        return self.tokens == self.tokens_before and not self.trimmed and not self.dropped


def matching_sentences(abstract: str, focus: str) -> tuple[str, bool]:
    """``abstract`` cut to its sentences sharing a content term with ``focus``, in order, and
    whether any did; else its first sentence (and False). Instruction-like sentences go."""
    sentences = [s for s in split_sentences(neutralise(abstract)) if re.search(r"\w", s)
                 and not looks_like_instruction(s)]
    if not sentences:
        return "", False
    wanted = content_terms(focus)
    kept = [s for s in sentences if content_terms(s) & wanted]
    if kept:
        return " ".join(kept), True
    return sentences[0], False


def _adds_something(hit: SearchHit, kept: str, focus: str) -> bool:
    return bool(content_terms(f"{hit.paper.title} {kept}") & content_terms(focus))


class _Prompt:
    """The prompt's token count as records and abstracts change (blocks counted once each)."""

    def __init__(self, evidence: EvidenceSet, fixed: str, counter: TokenCounter) -> None:
        self.evidence = evidence
        self.counter = counter
        self.fixed = counter.count(fixed)

    def tokens(self, hits: Sequence[SearchHit], abstracts: Sequence[str]) -> int:
        fitted = self.evidence.with_abstracts(hits, abstracts)
        return self.fixed + sum(self.counter.count(block) + JOIN_TOKENS for block in fitted.blocks())


def fit_evidence(evidence: EvidenceSet, focus: Sequence[str], *, fixed: str, budget: int, counter: TokenCounter,
                 droppable: Sequence[int] | None = None) -> FittedEvidence:
    """``evidence`` fitted to ``budget`` tokens with ``fixed`` (module docstring).

    ``focus[n - 1]`` is what record ``n``'s sentences are matched against; ``droppable`` the
    records (0-based) that may be left out, in the order they go (default: every record but the
    first, those that add nothing first, then from the last; ``()``: none). The records kept
    stay in their order.
    """
    prompt = _Prompt(evidence, fixed, counter)
    hits = list(evidence.hits)
    shown = [evidence.abstract_text(n) for n in range(1, len(hits) + 1)]
    before = prompt.tokens(hits, shown)
    if before <= budget:
        return FittedEvidence(evidence.with_abstracts(hits, shown), before, before, 0, 0)
    # step 2: the sentences that match each record's focus
    matched = [matching_sentences(hit.paper.abstract or "", focus[i]) for i, hit in enumerate(hits)]
    abstracts = [text if len(text) < len(shown[i]) else shown[i] for i, (text, _) in enumerate(matched)]
    tokens = prompt.tokens(hits, abstracts)
    # step 3: drop from the last, those that add nothing first
    keep = list(range(len(hits)))
    order = droppable if droppable is not None else sorted(
        range(1, len(hits)), key=lambda i: (_adds_something(hits[i], abstracts[i], focus[i]), -i))
    for i in order:
        if tokens <= budget:
            break
        keep.remove(i)
        tokens = prompt.tokens([hits[j] for j in keep], [abstracts[j] for j in keep])
    hits, abstracts, shown = [hits[j] for j in keep], [abstracts[j] for j in keep], [shown[j] for j in keep]
    # step 4: one length for every abstract, halved until it fits (then none)
    limit = max((len(text) for text in abstracts), default=0)
    while tokens > budget and limit > 0:
        limit = limit // 2 if limit // 2 >= MIN_ABSTRACT_CHARS else 0
        abstracts = [cut_at_word(text, limit) if limit else "" for text in abstracts]
        tokens = prompt.tokens(hits, abstracts)
    trimmed = sum(new != old for new, old in zip(abstracts, shown, strict=True))
    return FittedEvidence(evidence.with_abstracts(hits, abstracts), before, tokens, trimmed,
                          len(evidence) - len(hits))
