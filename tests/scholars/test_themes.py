"""Grouping papers into themes, labels, extractive sentences (real records, no model)."""

from __future__ import annotations

import re

import numpy as np

from retrieval.records.paper import Author, Paper
from retrieval.scholars.themes import (
    OTHER_LABEL,
    TermStats,
    assign_to_themes,
    extractive_theme_text,
    group_into_themes,
    label_for,
    salient_terms,
)
from tests.scholars.conftest import load_papers


def _del_maestro():
    return sorted(load_papers("arxiv_del_maestro.jsonl"), key=lambda p: p.published or "", reverse=True)


def _by_title(papers, start: str):
    return next(p for p in papers if p.title.startswith(start))


def test_helium_nanopore_papers_form_one_theme_with_a_telling_label(background):
    papers = _del_maestro()
    themes = group_into_themes(papers, background)
    helium = {"A Luttinger Liquid Core Inside Helium-4", "Helium-4 Luttinger liquids in nanopores",
              "Quantum Monte Carlo measurement of the chemical potential"}
    owner = [t for t in themes if any(p.title.startswith(tuple(helium)) for p in t.papers)]
    assert len(owner) == 1  # never split across themes
    assert "Monte Carlo" in owner[0].label or "Luttinger" in owner[0].label
    # every paper in exactly one theme, newest first inside a theme
    assert sorted(p.id for t in themes for p in t.papers) == sorted(p.id for p in papers)
    for theme in themes:
        dates = [p.published or "" for p in theme.papers]  # undated last, as themes order them
        assert dates == sorted(dates, reverse=True)


def test_density_wave_papers_are_apart_from_the_helium_ones(background):
    papers = _del_maestro()
    themes = group_into_themes(papers, background)
    owner = {p.title: t.label for t in themes for p in t.papers}
    assert owner[_by_title(papers, "Thermal melting of density waves").title] != owner[
        _by_title(papers, "Helium-4 Luttinger liquids").title
    ]


def test_max_themes_puts_leftover_singletons_under_other_topics(background):
    papers = _del_maestro()
    themes = group_into_themes(papers, background, max_themes=2)
    assert len(themes) == 2 and themes[-1].label == OTHER_LABEL and themes[-1].phrase == ""


def test_labels_keep_proper_nouns_and_acronyms_and_skip_filler(background):
    papers = _del_maestro()
    phrase, _ = label_for([_by_title(papers, "Quantum Monte Carlo measurement"),
                              _by_title(papers, "A Luttinger Liquid Core")], background)
    assert "Monte Carlo" in phrase  # as the abstracts write it, though titles are Title Case
    conference = [p for p in load_papers("conference_authors_slice.jsonl") if p.title.startswith("Towards")]
    for paper in conference:
        assert "toward" not in label_for([paper], background)[0].lower()


def test_salient_terms_name_the_field(background):
    terms = salient_terms(_del_maestro(), background)
    assert any("Monte Carlo" in t for t in terms)
    assert any("Luttinger" in t for t in terms)


def test_extractive_text_cites_each_paper_once_and_quotes_the_central_abstract(background):
    papers = _del_maestro()[:5]
    themes = group_into_themes(papers, background)
    numbers = {p.id: n for n, p in enumerate((p for t in themes for p in t.papers), start=1)}
    texts = [extractive_theme_text(t, numbers) for t in themes]
    cited = [int(n) for text in texts for n in re.findall(r"\[(\d+)\]", text)]
    assert set(cited) == set(numbers.values())
    big = max(themes, key=lambda t: len(t.papers))
    text = texts[themes.index(big)]
    assert text.startswith(f"{len(big.papers)} papers on ")
    assert "From the abstract of [" in text


def test_many_papers_are_summarised_as_n_more(background):
    papers = load_papers("conference_authors_slice.jsonl")[:12]
    themes = group_into_themes(papers, TermStats.from_papers(papers), max_themes=1)
    assert len(themes) == 1
    numbers = {p.id: n for n, p in enumerate(themes[0].papers, start=1)}
    text = extractive_theme_text(themes[0], numbers)
    assert "8 more [5][6][7][8][9][10][11][12]" in text
    # the "Other topics" group has no label of its own: its most telling phrases are named
    assert text.startswith("12 papers on various topics (2023), among them large language models")


def test_older_papers_are_placed_into_recent_themes_or_other(background):
    papers = _del_maestro()
    recent, older = papers[:3], papers[3:]
    themes = group_into_themes(recent, background)
    labels = assign_to_themes(papers, themes, background)
    assert {labels[p.id] for p in recent} == {t.label for t in themes}
    helium_2011 = _by_title(papers, "Helium-4 Luttinger liquids in nanopores")
    melting_2004 = _by_title(papers, "Thermal melting of density waves")
    assert labels[helium_2011.id] == themes[0].label
    assert labels[melting_2004.id] == OTHER_LABEL
    assert all(labels[p.id] for p in older)


def test_embeddings_when_given_replace_term_overlap(background):
    papers = _del_maestro()[:4]
    # orthogonal vectors: nothing is alike, so every paper is its own theme
    vectors = {p.id: np.eye(4)[i] for i, p in enumerate(papers)}
    assert len(group_into_themes(papers, background, vectors=vectors)) == 4
    # identical vectors: one theme
    same = {p.id: np.ones(4) / 2 for p in papers}
    assert len(group_into_themes(papers, background, vectors=same)) == 1


def test_papers_all_inside_the_themes_keep_their_theme_in_the_order_asked(background):
    papers = _del_maestro()
    themes = group_into_themes(papers, background)
    asked = list(reversed(papers))
    labels = assign_to_themes(asked, themes, background)
    assert list(labels) == [p.id for p in asked]
    assert labels == {p.id: t.label for t in themes for p in t.papers}


def _paper(title: str, abstract: str) -> Paper:
    return Paper(title=title, abstract=abstract, authors=[Author(name="Ada Lovelace")], published="2024")


def _field_background(person: list[Paper]) -> TermStats:
    """An index of 200 other papers of a field where every paper says "model" and "increases", and
    a few say "blockchain", plus ``person``'s papers."""
    others = [_paper(f"A model of problem {n}", f"Our model increases accuracy on task {n}.") for n in range(190)]
    others += [_paper(f"Blockchain study {n}", "A model of a ledger.") for n in range(10)]
    return TermStats.from_papers([*others, *person])


def test_topics_are_what_sets_the_papers_apart_not_what_the_field_says_everywhere():
    person = [
        _paper("Blockchain consensus for sensor networks", "The model increases throughput of the ledger."),
        _paper("Gossip protocols on a blockchain", "This increases the reach of the model."),
        _paper("Blockchain sharding at scale", "Sharding increases capacity; our model shows it."),
        _paper("Increasing the fairness of gossip protocols", "It increases fairness in the model."),
        _paper("Peer sampling with gossip protocols", "A model of peer sampling increases coverage."),
    ]
    terms = salient_terms(person, _field_background(person))
    assert set(terms[:2]) == {"gossip protocols", "blockchain"}
    # used by every paper, but the whole field uses it as much: no topic, however often it is used
    assert "model" not in terms
    # in every abstract and one title: a single word must be in two titles of four papers or more
    assert not any(t.startswith("increas") for t in terms)


def test_one_scholars_index_still_has_topics():
    """The papers are the whole background (one list indexed): nothing to compare with, so the
    terms are scored by how rare they are among the papers instead of by keyness (never none)."""
    person = [_paper("Blockchain consensus", "A ledger."), _paper("Blockchain sharding", "A ledger split."),
              _paper("Gossip on a blockchain", "Gossip."), _paper("Gossip protocols", "Gossip again.")]
    terms = salient_terms(person, TermStats.from_papers(person))
    assert terms and terms[0] == "blockchain"


def test_a_possessive_is_not_part_of_a_topics_name():
    """An abstract's "federated learning’s" is the form most often written when titles (Title Case,
    counted less) say "Federated Learning": the topic is still "federated learning"."""
    person = [_paper("Attacks on Federated Learning", "We study federated learning’s weak points."),
              _paper("Defending Federated Learning", "Federated learning’s clients can lie.")]
    terms = salient_terms(person, _field_background(person))
    assert "federated learning" in terms and not any("’s" in t or "'s" in t for t in terms)


def test_a_possessive_inside_a_topic_is_kept():
    """Only a possessive that ends a term goes: "Alzheimer’s disease" stays as written."""
    person = [_paper("Imaging Biomarkers of Alzheimer’s Disease", "Early detection of Alzheimer’s disease from MRI."),
              _paper("Speech Markers of Alzheimer’s Disease", "Alzheimer’s disease changes how patients speak.")]
    terms = salient_terms(person, _field_background(person))
    assert "Alzheimer’s disease" in terms
    assert "Alzheimer disease" not in terms and "Alzheimer’s" not in terms
