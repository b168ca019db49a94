"""Evidence rule 4: the question's rarest word the index knows must be in the evidence.

Records that share only a question's common words ("compressed sensing", "social media") are
about something else; a word no record has at all may be a synonym and decides nothing.
"""

from __future__ import annotations

import math
from pathlib import Path

from retrieval.answers.evidence import rarest_term, select_relevant
from retrieval.records.paper import Author, Paper
from retrieval.results import SearchFilters, SearchHit

SENSING = Paper(title="Compressed sensing with deep generative models", published="2020",
                authors=[Author(name="Ann Lee")])
MRI = Paper(title="Fast MRI reconstruction by compressed sensing", published="2019", authors=[Author(name="Bo Ray")])


def rarity_of(table: dict[str, float]):
    """IDF by stemmed word; words not in the table are unseen by the index (math.inf)."""
    return lambda term: table.get(term, math.inf)


def hit(paper: Paper, score: float = 0.6, dense: float = 0.5) -> SearchHit:
    return SearchHit(paper=paper, score=score, dense_score=dense)


QUESTION = "MRI reconstruction with compressed sensing"


def test_the_rarest_known_word_must_be_in_the_evidence():
    rarity = rarity_of({"mri": 6.0, "compress": 3.0, "sens": 2.5, "reconstruct": 2.0})
    assert rarest_term(QUESTION, rarity) == "mri"
    assert select_relevant(QUESTION, [hit(SENSING)], None, rarity) == []  # only the common words
    # a gate on the evidence as a whole: once a record holds the rare word, the rest may stand beside it
    assert select_relevant(QUESTION, [hit(MRI), hit(SENSING)], None, rarity)[0].paper.title == MRI.title
    # without rarity (a retriever that cannot say), rules 1-3 alone decide: the phrase is covered
    assert select_relevant(QUESTION, [hit(SENSING)], None) != []


def test_a_word_no_record_has_decides_nothing():
    # "typesetter" is in no record (the index says "compositor"): not required
    rarity = rarity_of({"compress": 3.0, "sens": 2.5, "reconstruct": 2.0})
    assert rarest_term(QUESTION, rarity) == "compress"
    assert select_relevant(QUESTION, [hit(SENSING)], None, rarity) != []


def test_a_paraphrase_stands_in_for_the_rare_word():
    rarity = rarity_of({"mri": 6.0, "compress": 3.0, "sens": 2.5, "reconstruct": 2.0})
    assert select_relevant(QUESTION, [hit(SENSING, score=0.8, dense=0.7)], None, rarity) != []


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
