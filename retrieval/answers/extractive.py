"""The no-LLM answer: one key sentence from each relevant record, each ending with its [n].

The answer is a lead-in line followed by one list item per record (at most
``MAX_EXTRACTIVE_RECORDS``, in retriever order)::

    Relevant passages from 2 indexed papers:
    - Convergence of the discrete dipole approximation (2007): We show that ... [1]
    - The discrete dipole approximation: an overview (2007): We review ... [2]

The key sentence is the abstract sentence most similar to the question: by default the one
sharing the most stemmed content words with it (ties: the higher share of the sentence, then
the earlier sentence); a ``SentenceScorer`` can replace that. When no sentence shares a word,
the abstract's first sentence stands in. A record without an abstract (a title-only entry of a
publication list) is shown by its title, venue and year, never as an empty item::

    - Scalable checkpointing for exascale (SC '25, 2025) [3]

Sentences are quoted from the record, lightly trimmed (a leading connective such as "However,"
is removed, very long sentences are cut at a word), never paraphrased or joined with claims of
our own. Record text is untrusted and passes through ``neutralise`` first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from retrieval.answers.citations import period_ends_sentence, split_sentences
from retrieval.answers.evidence import looks_like_instruction, neutralise
from retrieval.records.paper import Paper
from retrieval.results import AnswerMode, AnswerResult, Citation, SearchHit
from retrieval.text import content_terms

NO_EVIDENCE_ANSWER = "No indexed paper addresses this."
MAX_EXTRACTIVE_RECORDS = 5
MAX_SENTENCE_CHARS = 300
MAX_TITLE_CHARS = 120

# (question, sentences) -> one similarity per sentence, higher is more similar.
SentenceScorer = Callable[[str, Sequence[str]], Sequence[float]]

_CONNECTIVE = re.compile(
    r"^(?:however|moreover|furthermore|in addition|additionally|thus|therefore|hence|finally|"
    r"consequently|also|besides|in contrast|on the other hand|similarly|in particular|then)\s*,\s*",
    re.IGNORECASE,
)


def lexical_scorer(question: str, sentences: Sequence[str]) -> list[float]:
    """Shared stemmed content words with the question, plus their share of the sentence (<1)."""
    wanted = content_terms(question)
    scores: list[float] = []
    for sentence in sentences:
        terms = content_terms(sentence)
        shared = len(wanted & terms)
        scores.append(shared + (shared / (len(terms) + 1)))
    return scores


def trim_sentence(sentence: str, limit: int = MAX_SENTENCE_CHARS) -> str:
    text = _CONNECTIVE.sub("", sentence.strip())
    if len(text) > limit:
        text = text[:limit].rsplit(" ", 1)[0].rstrip(",;:") + " …"
    text = text.rstrip(" .;:")
    return text[:1].upper() + text[1:]


def key_sentence(question: str, paper: Paper, scorer: SentenceScorer | None = None) -> str | None:
    """The abstract sentence of ``paper`` most similar to ``question``, trimmed; None without abstract."""
    sentences = [
        s for s in split_sentences(neutralise(paper.abstract))
        if re.search(r"\w", s) and not looks_like_instruction(s)
    ]
    if not sentences:
        return None
    scores = list((scorer or lexical_scorer)(question, sentences))
    best = max(range(len(sentences)), key=lambda i: (scores[i], -i))
    chosen = sentences[best] if scores[best] > 0 else sentences[0]
    return trim_sentence(chosen) or None


def abstention(question: str, mode: AnswerMode, *, answer: str = NO_EVIDENCE_ANSWER,
               notice: str | None = None) -> AnswerResult:
    """An abstaining result: a plain sentence, no citations."""
    return AnswerResult(question=question, answer=answer, mode=mode, abstained=True, citations=[], notice=notice)


_SENTENCE_BREAK = re.compile(r"(\S*)\.\s+(?=[A-Z0-9])")  # a word, its period, then what starts a sentence


def _label_title(title: str) -> str:
    """The title as a label: no sentence break inside (so the item stays one cited sentence)."""
    text = _SENTENCE_BREAK.sub(lambda m: m.group(0) if not period_ends_sentence(m.group(1)) else m.group(1) + ": ",
                               neutralise(title))
    text = re.sub(r"([?!])\s+(?=[A-Z0-9])", r"\1 – ", text)
    return text.rstrip(" .")


def item_label(paper: Paper, *, with_venue: bool = False) -> str:
    """"Title (Venue, 2024)": the title as a label, then venue (when asked for) and year."""
    title = _label_title(paper.title)
    if len(title) > MAX_TITLE_CHARS:
        title = title[:MAX_TITLE_CHARS].rsplit(" ", 1)[0] + " …"
    venue = _label_title(paper.venue) if with_venue and paper.venue else None
    facts = ", ".join(part for part in (venue, str(paper.year) if paper.year else None) if part)
    return f"{title} ({facts})" if facts else (title or "Untitled record")


def _item(n: int, paper: Paper, sentence: str | None) -> str:
    """One cited line; a title-only record carries its venue too, so the line says something."""
    if sentence:
        return f"- {item_label(paper)}: {sentence} [{n}]"
    return f"- {item_label(paper, with_venue=True)} [{n}]"


def extractive_answer(
    question: str,
    hits: Sequence[SearchHit],
    *,
    notice: str | None = None,
    max_records: int = MAX_EXTRACTIVE_RECORDS,
    scorer: SentenceScorer | None = None,
) -> AnswerResult:
    """Answer from already-relevant ``hits`` (best first); abstain when there are none."""
    chosen = list(hits[:max_records])
    if not chosen:
        return abstention(question, "extractive", notice=notice)
    noun = "paper" if len(chosen) == 1 else "papers"
    lines = [f"Relevant passages from {len(chosen)} indexed {noun}:"]
    citations: list[Citation] = []
    for n, hit in enumerate(chosen, start=1):
        lines.append(_item(n, hit.paper, key_sentence(question, hit.paper, scorer)))
        citations.append(Citation.from_paper(n, hit.paper, hit.score))
    return AnswerResult(
        question=question,
        answer="\n".join(lines),
        mode="extractive",
        abstained=False,
        citations=citations,
        notice=notice,
    )
