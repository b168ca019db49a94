"""The one-line reason of a ranked person (no model; see test_with_index.py for
``find_collaborators`` over the real index, test_expertise.py for the ranking arithmetic)."""

from __future__ import annotations

from datetime import date

from retrieval.scholars.collaborators import reason
from retrieval.scholars.expertise import document_model_scores
from tests.scholars.conftest import ranked_hits

TODAY = date(2025, 1, 1)


def test_reason_line(mlsys):
    papers, directory = mlsys
    hits = ranked_hits(papers, ["On Optimizing the Communication", "Does Compressing Activations", "Cuttlefish"])
    ranked = {e.person.name: e for e in document_model_scores(hits, directory, TODAY)}
    assert reason(ranked["Eric Xing"], 150) == "3 papers among the 20 closest (best #1); latest 2024"
    assert reason(ranked["Hongyi Wang"], 150) == (
        "2 papers among the 20 closest (best #2); latest 2024; first author on 1"
    )
    assert reason(ranked["Hexu Zhao"], 150).endswith("last author on 1")
