"""The judgement's word signals: the question's rarest known word held by a top record counts for
an answer; a word no record has counts against it, never skipped (``retrieval.answers.judgement``).

Records that share only a question's common words ("compressed sensing", "social media") are
often about something else; a question term the index has never seen is a concept it may lack.
"""

from __future__ import annotations

import math
from pathlib import Path

from retrieval.answers.judgement import TYPICAL_BACKGROUND, WEIGHTS, measure_signals, probability
from retrieval.records.paper import Author, Paper
from retrieval.results import SearchFilters, SearchHit

SENSING = Paper(title="Compressed sensing with deep generative models", published="2020",
                authors=[Author(name="Ann Lee")])
MRI = Paper(title="Fast MRI reconstruction by compressed sensing", published="2019", authors=[Author(name="Bo Ray")])


def rarity_of(table: dict[str, float]):
    """IDF by stemmed word; words not in the table are unseen by the index (math.inf)."""
    return lambda term: table.get(term, math.inf)


def hit(paper: Paper, score: float = 0.6, dense: float = 0.5) -> SearchHit:
    return SearchHit(paper=paper, score=score, dense_score=dense, lexical_score=1.0)


QUESTION = "MRI reconstruction with compressed sensing"
KNOWN = {"mri": 6.0, "compress": 3.0, "sens": 2.5, "reconstruct": 2.0}


def test_the_rarest_known_word_held_counts_for_an_answer():
    rarity = rarity_of(KNOWN)
    without = measure_signals(QUESTION, [hit(SENSING)], TYPICAL_BACKGROUND, rarity)
    held = measure_signals(QUESTION, [hit(MRI)], TYPICAL_BACKGROUND, rarity)
    assert without is not None and held is not None
    assert without.rarest_held == 0.0 and held.rarest_held == 1.0
    assert WEIGHTS["rarest_held"] > 0
    assert probability(held) > probability(without)


def test_a_word_no_record_has_counts_against():
    rarity = rarity_of({"compress": 3.0, "sens": 2.5, "reconstruct": 2.0})  # "mri" unseen by the index
    unseen = measure_signals(QUESTION, [hit(SENSING)], TYPICAL_BACKGROUND, rarity)
    assert unseen is not None and unseen.unknown_share == 1 / 4
    assert unseen.rarest_held == 1.0  # the rarest *known* word ("compress") is there
    known = measure_signals(QUESTION, [hit(SENSING)], TYPICAL_BACKGROUND, rarity_of({**KNOWN, "mri": 3.5}))
    assert known is not None and known.unknown_share == 0.0
    assert WEIGHTS["unknown_share"] < 0


def test_without_rarity_no_word_signal_is_read():
    signals = measure_signals(QUESTION, [hit(SENSING)], TYPICAL_BACKGROUND, None)
    assert signals is not None and signals.unknown_share == 0.0 and signals.rarest_held == 1.0


def test_names_of_the_filters_are_not_the_rare_word(tmp_path: Path, monkeypatch):
    """'papers by Aditya Grover on diffusion': the records must hold "diffusion", not "Grover"."""
    from retrieval.assistant import Assistant
    from retrieval.index.paper_index import PaperIndex
    from tests.answers.conftest import make_settings
    from tests.index.conftest import HashEncoder

    index = PaperIndex.open(make_settings(data_dir=tmp_path), encoder=HashEncoder())
    try:
        index.upsert([Paper(title="Diffusion models for offline optimization", published="2023",
                            authors=[Author(name="Aditya Grover")]),
                      Paper(title="Graph neural networks", published="2022", authors=[Author(name="Cy Dee")])])
        assistant = Assistant(index.settings, index=index, chat_model=None)
        # two records say nothing about which word is specific: no rule 4 there
        assert assistant.answering.rarity(SearchFilters()) is None
        monkeypatch.setattr("retrieval.answers.evidence.RARITY_MIN_RECORDS", 2)
        rarity = assistant.answering.rarity(SearchFilters(authors=["Aditya Grover"]))
        assert rarity is not None and rarity("grover") == 0.0 and rarity("aditya") == 0.0
        assert 0 < rarity("diffus") < math.inf and rarity("sourdough") == math.inf
    finally:
        index.close()
