"""Does the index cover a collaborators topic? The evidence judgement of ``ask``, read for a topic.

``paperbot collaborators`` always ranks whoever wrote the closest papers, so a topic nobody in the
index works on ("optical interconnects for ML training" over 40 lists in NLP, systems and physics)
would get a confident-looking ranking of people from neighbouring fields. ``judge_topic`` asks the same
judgement ``ask`` uses to answer or abstain (``retrieval.answers.judgement``: the best record
against the index's own background, the field of near misses, the topic's words the index lacks)
of the topic's first ``JUDGED_HITS`` hits, as ``ask`` judges its default k. A notice is only
worth reading when it is rarely wrong, so a topic counts as not covered only when the judgement's
probability is below ``NOT_COVERED_BELOW``, far under ``ask``'s cut. The ranking is kept either
way; a topic judged not covered gets a notice saying why and what the closest papers are.
Measured in docs/performance.md ("Collaborators: is the topic covered?").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from retrieval.answers.evidence import CountedIndex, index_rarity, neutralise
from retrieval.answers.judgement import Verdict, judge, why_not
from retrieval.index.background import Background
from retrieval.results import SearchHit

JUDGED_HITS = 8  # ``ask``'s default k: the judgement's weights were fitted on that many records
# Chosen on the tuning halves only: the highest cut at which at most 10 % of the answerable
# tuning topics (held-out titles of the experts benchmark, paraphrases, topic and mixed questions)
# are flagged (docs/performance.md). ``ask`` answers from 0.5 (``judgement.ANSWER_PROBABILITY``).
NOT_COVERED_BELOW = 0.1

#: A topic and its hits (retrieval order) -> the judgement's verdict, None when it cannot judge
TopicJudge = Callable[[str, Sequence[SearchHit]], Verdict | None]


class JudgedIndex(CountedIndex, Protocol):
    """What the topic judgement reads of an index (``PaperIndex``): ``index_rarity``'s, and its background."""

    def evidence_background(self) -> Background: ...


def topic_judge(index: JudgedIndex) -> TopicJudge:
    """The judgement over ``index``: its background, and its word rarity once it is large enough
    for word frequencies to tell specific words apart (``evidence.index_rarity``, as ``ask``)."""

    def judge_topic(topic: str, hits: Sequence[SearchHit]) -> Verdict | None:
        top = list(hits[:JUDGED_HITS])
        if not any(hit.dense_score is not None for hit in top):
            return None  # a lexical-only search: no meaning to read
        return judge(neutralise(topic), top, index.evidence_background(), index_rarity(index))

    return judge_topic


def covers(verdict: Verdict) -> bool:
    """False when the judgement is sure enough that the index does not cover the topic."""
    return verdict.probability >= NOT_COVERED_BELOW


def not_covered_notice(verdict: Verdict) -> str:
    """What to tell a reader of a ranking for a topic the index does not cover."""
    return (f"The index may not cover this topic: {why_not(verdict)} The people below wrote the closest "
            "papers found; check them before you write to anyone.")
