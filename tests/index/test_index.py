"""PaperIndex end to end: real Chroma (embedded and a `chroma run` server), real local encoder.

Every test here runs twice through the ``index_settings`` fixture: once with the embedded
PersistentClient, once against a real Chroma server subprocess.
"""

from __future__ import annotations

import shutil
import sqlite3

import numpy as np
import pytest

from retrieval.errors import InputError
from retrieval.index.dense import record_metadata
from retrieval.index.fusion import CALIBRATED_MIN_RELEVANCE, FusionConfig, fused_score, lexical_trust
from retrieval.index.paper_index import PaperIndex
from retrieval.records.paper import Author, Paper
from retrieval.results import SearchFilters
from retrieval.storage.roster import Roster, names_of

from .conftest import CountingEncoder, by_arxiv, make_settings

pytestmark = pytest.mark.slow


@pytest.fixture
def index(index_settings, counting_encoder: CountingEncoder):
    opened = PaperIndex.open(index_settings, counting_encoder)
    yield opened
    opened.close()


@pytest.fixture
def filled(index: PaperIndex, arxiv_papers: list[Paper], counting_encoder: CountingEncoder) -> PaperIndex:
    index.upsert(arxiv_papers)
    counting_encoder.reset()
    return index


# --- upsert ------------------------------------------------------------------------------------


def test_upsert_reports_added_updated_unchanged_and_embeds_only_new_text(index, arxiv_papers, counting_encoder):
    progress: list[tuple[int, int]] = []
    first = index.upsert(arxiv_papers[:10], progress=lambda done, total: progress.append((done, total)))
    assert sorted(first.added) == sorted(p.id for p in arxiv_papers[:10])
    assert first.updated == first.unchanged == [] and first.embedded == 10
    assert len(counting_encoder.texts) == 10
    assert progress[0] == (0, 10) and progress[-1] == (10, 10)
    assert [done for done, _ in progress] == sorted(done for done, _ in progress)
    assert index.count() == 10 and index.dense.count() == 10

    counting_encoder.reset()
    new_venue = arxiv_papers[0].model_copy(update={"venue": "Physical Review D"})  # metadata only
    new_text = arxiv_papers[1].model_copy(update={"abstract": "A completely rewritten abstract about graphs."})
    second = index.upsert([new_venue, new_text, *arxiv_papers[2:12]])
    assert second.added == [p.id for p in arxiv_papers[10:12]]
    assert second.updated == [new_venue.id, new_text.id]
    assert sorted(second.unchanged) == sorted(p.id for p in arxiv_papers[2:10])
    # re-embedded: the changed text and the two new records; never the unchanged or metadata-only ones
    assert sorted(counting_encoder.texts) == sorted(p.embedding_text for p in [new_text, *arxiv_papers[10:12]])
    assert index.get(new_venue.id).venue == "Physical Review D"
    hit = index.search("diphoton production cross sections Tevatron", k=1,
                       filters=SearchFilters(venue="Physical Review D"))
    assert hit and hit[0].paper.id == new_venue.id

    counting_encoder.reset()
    third = index.upsert([new_venue, new_text])
    assert third.unchanged == [new_venue.id, new_text.id] and third.embedded == 0
    assert counting_encoder.texts == []


def test_upsert_with_a_changed_id_replaces_the_old_record_and_reuses_its_vector(index, arxiv_papers, counting_encoder):
    hashed = Paper(title="Sparsity-certifying Graph Decompositions", authors=arxiv_papers[1].authors,
                   abstract=arxiv_papers[1].abstract, published="2007")
    assert hashed.id.startswith("hash:")
    index.upsert([hashed, *arxiv_papers[2:5]])
    counting_encoder.reset()
    with_doi = hashed.model_copy(update={"doi": "10.1234/sparsity.2007"})  # a DOI appeared: the id changes
    report = index.upsert([with_doi], replaces={with_doi.id: hashed.id})
    assert report.added == [with_doi.id] and report.replaced == [hashed.id]
    assert report.embedded == 0 and report.reused == 1 and counting_encoder.texts == []
    assert index.get(hashed.id) is None and index.get(with_doi.id) == with_doi
    assert index.count() == 4 and index.dense.count() == 4
    assert index.check_consistency().ok
    assert index.search("sparsity certifying graph decompositions", k=1)[0].paper.id == with_doi.id


def test_chroma_writes_are_batched(index, arxiv_papers, monkeypatch):
    from retrieval.index import dense as chroma_client

    sizes: list[int] = []
    collection = index.dense._get_collection()
    real_upsert = collection.upsert

    def recording_upsert(*, ids, **kwargs):
        sizes.append(len(ids))
        return real_upsert(ids=ids, **kwargs)

    monkeypatch.setattr(collection, "upsert", recording_upsert)
    monkeypatch.setattr(chroma_client, "BATCH", 4)
    index.upsert(arxiv_papers[:10])
    assert sizes == [4, 4, 2] and index.dense.count() == 10


def test_replacing_with_new_text_embeds_it(index, arxiv_papers, counting_encoder):
    old = arxiv_papers[3]
    index.upsert([old])
    counting_encoder.reset()
    new = old.model_copy(update={"doi": "10.1234/new", "abstract": "Different words entirely."})
    report = index.upsert([new], replaces={new.id: old.id})
    assert report.embedded == 1 and report.reused == 0 and report.replaced == [old.id]
    assert index.store.ids() == {new.id}


def test_replaces_must_name_upserted_ids(index, arxiv_papers):
    with pytest.raises(ValueError):
        index.upsert(arxiv_papers[:1], replaces={"doi:10.1/not-in-batch": arxiv_papers[0].id})


def test_delete_removes_record_vector_and_search_hit(filled, arxiv_papers):
    target = by_arxiv(arxiv_papers, "0704.0016")
    assert filled.delete([target.id, "hash:unknown"]) == 1
    assert filled.get(target.id) is None and filled.dense.count() == len(arxiv_papers) - 1
    hits = filled.search("lifetime of doubly charmed baryons", k=5)
    assert target.id not in [h.paper.id for h in hits]
    assert filled.check_consistency().ok


# --- search ------------------------------------------------------------------------------------


def test_hybrid_search_ranks_the_matching_paper_first_with_scores(filled, arxiv_papers):
    hits = filled.search("lifetime of doubly charmed baryons", k=5)
    assert hits[0].paper.id == by_arxiv(arxiv_papers, "0704.0016").id
    assert len(hits) == 5
    top = hits[0]
    assert 0 < top.score <= 1 and top.dense_score > 0.5 and top.lexical_score == 1.0
    assert top.score >= filled.relevance_threshold
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # an off-topic question stays below the calibrated threshold
    off_topic = filled.search("how do I bake sourdough bread at home", k=3)
    assert off_topic[0].score < filled.relevance_threshold
    assert not filled.is_relevant(off_topic[0]) and filled.is_relevant(top)


def test_hybrid_score_is_the_fusion_of_cosine_scaled_bm25_and_coverage(filled):
    query = "light scattering by particles with the discrete dipole approximation, not superstring amplitudes"
    scored = filled.lexical.current().score_all(query)
    snapshot = filled.lexical.current()
    best_coverage = float(scored.coverage.max())
    assert 0 < best_coverage < 1  # no record holds every term of the query
    for fusion in (filled.fusion, FusionConfig(lexical_trust_power=2.0)):
        index = PaperIndex(filled.settings, filled.store, filled.dense, filled.lexical, filled.encoder, fusion=fusion)
        assert index.fusion is fusion  # what it reports is what its searches use, and it cannot drift from it
        with pytest.raises(AttributeError):
            index.fusion = FusionConfig()  # type: ignore[misc]
        trust = lexical_trust(best_coverage, fusion)
        assert trust == (1.0 if fusion.lexical_trust_power == 0 else pytest.approx(best_coverage ** 2))
        hits = index.search(query, k=5)
        for hit in hits:
            assert hit.lexical_score is not None  # hybrid search scores every hit on both sides
            coverage = float(scored.coverage[snapshot.position(hit.paper.id)])
            expected = fused_score(hit.dense_score, hit.lexical_score, fusion, coverage, trust)
            assert hit.score == pytest.approx(expected, abs=2e-6)
        assert any(0 < float(scored.coverage[snapshot.position(h.paper.id)]) < 1 for h in hits)
    # without the coverage weight the same candidates are scored by cosine and BM25 alone
    plain = PaperIndex(filled.settings, filled.store, filled.dense, filled.lexical, filled.encoder,
                       fusion=FusionConfig(coverage_weight=0.0))
    for hit in plain.search(query, k=5):
        assert hit.lexical_score is not None  # hybrid search scores every hit on both sides
        assert hit.score == pytest.approx(fused_score(hit.dense_score, hit.lexical_score, plain.fusion), abs=2e-6)


def test_dense_and_lexical_search_alone(filled, arxiv_papers):
    target = by_arxiv(arxiv_papers, "0704.0015").id
    dense = filled.dense_search("fermionic superstring amplitudes pure spinor formalism", k=3)
    assert dense[0].paper.id == target and dense[0].lexical_score is None
    assert dense[0].score == dense[0].dense_score
    lexical = filled.lexical_search("superstring loop amplitudes", k=3)
    assert lexical[0].paper.id == target and lexical[0].score == lexical[0].lexical_score == 1.0


def test_filters_apply_inside_both_retrievers_not_after_truncation(index_settings, counting_encoder, arxiv_papers):
    # Each retriever keeps only 2 candidates: a filter applied after truncation would find nothing.
    index = PaperIndex.open(index_settings, counting_encoder, fusion=FusionConfig(fetch_k=2))
    try:
        index.upsert(arxiv_papers)
        query = "discrete dipole approximation light scattering"
        unfiltered = [h.paper.id for h in index.search(query, k=2)]
        target = by_arxiv(arxiv_papers, "0704.0044")  # the only 2009 paper: astrophysical gyrokinetics
        assert target.id not in unfiltered
        for search in (index.search, index.dense_search):
            hits = search(query, k=2, filters=SearchFilters(since=2009))
            assert [h.paper.id for h in hits] == [target.id]
        hits = index.search(query, k=5, filters=SearchFilters(authors=["D. Choi"]))  # modular forms: off-topic
        assert sorted(h.paper.arxiv_id or "" for h in hits) == ["0704.0012", "0704.0013"]
    finally:
        index.close()


def test_author_filter_is_initials_aware(filled, arxiv_papers):
    for name in ("M. A. Yurkin", "Maxim Yurkin", "Yurkin", "yurkin, maxim"):
        hits = filled.search("approximation", k=10, filters=SearchFilters(authors=[name]))
        assert {h.paper.id for h in hits} == {p.id for p in arxiv_papers if "Yurkin" in p.short_authors(9)}, name
    chen = filled.search("baryons", k=10, filters=SearchFilters(authors=["X. Chen"]))
    assert [h.paper.arxiv_id for h in chen] == ["0704.0029"]  # Xiao-Lin Chen; not Chong Chen


NAMESAKES = {
    "smith": ("Barry Smith Jr.", "Barry F. Smith"),
    "di": ("Di Wang", "Wei Wang"),
    "zhang": ("Zhang Zhao", "Tong Zhang"),  # Zhang Zhao: written family name first
}


@pytest.fixture
def namesakes(index: PaperIndex) -> dict[str, Paper]:
    topics = iter(["multigrid preconditioners", "Krylov recycling", "domain decomposition", "mixed precision",
                   "GPU sparse kernels", "communication-avoiding methods"])  # distinct: no near-duplicates
    papers = {f"{key} {n}": Paper(title=f"Sparse solvers: {topic}", abstract=f"We study {topic} for sparse solvers.",
                                  year=2020, authors=[Author(name=name)])
              for key, names in NAMESAKES.items() for n, (name, topic) in enumerate(zip(names, topics, strict=False))}
    index.upsert(list(papers.values()))
    return papers


@pytest.mark.parametrize(
    ("wanted", "found"),
    [
        ("Barry Smith", {"smith 0", "smith 1"}),  # the suffix is not the family name
        ("Barry Smith Jr.", {"smith 0", "smith 1"}),
        ("B. Smith", {"smith 0", "smith 1"}),
        ("Di Wang", {"di 0"}),  # "Di" is a given name here, not a particle
        ("Wei Wang", {"di 1"}),
        ("Wang", {"di 0", "di 1"}),
        ("Zhao Zhang", {"zhang 0"}),  # either order of a Chinese name
        ("Zhang, Zhao", {"zhang 0"}),
        ("Tong Zhang", {"zhang 1"}),
    ],
)
def test_author_filter_reads_names_like_the_scholar_pages(index, namesakes, wanted, found):
    hits = index.search("sparse solvers", k=10, filters=SearchFilters(authors=[wanted]))
    assert {h.paper.id for h in hits} == {namesakes[key].id for key in found}, wanted


@pytest.fixture
def roster_index(index_settings, counting_encoder: CountingEncoder):
    """An index whose author filters follow the roster, opened as ``Assistant.index`` opens it."""
    opened = PaperIndex.open(index_settings, counting_encoder, roster_names=lambda name: names_of(index_settings, name))
    yield opened
    opened.close()


def test_author_filter_follows_roster_aliases(roster_index):
    index = roster_index
    written = {"Luanzheng Guo": "checkpointing for LLM fine-tuning", "Lenny Guo": "I/O tracing on HPC systems",
               "Li Guo": "graph partitioning heuristics"}
    papers = {name: Paper(title=f"Studies of {topic}", abstract=f"We study {topic}.", year=2024,
                          authors=[Author(name=name)]) for name, topic in written.items()}
    index.upsert(list(papers.values()))

    def found(name: str) -> set[str]:
        return {h.paper.id for h in index.search("studies", k=10, filters=SearchFilters(authors=[name]))}

    assert found("Lenny Guo") == {papers["Lenny Guo"].id}  # no roster yet: the written name only
    Roster.load(index.settings).add("Luanzheng Guo", orcid="0000-0002-1825-0097", aliases=["Lenny Guo"])
    both = {papers["Luanzheng Guo"].id, papers["Lenny Guo"].id}
    assert found("Lenny Guo") == found("Luanzheng Guo") == found("0000-0002-1825-0097") == both
    assert found("Li Guo") == {papers["Li Guo"].id}
    _, parsed = index.parse_question("which papers by Lenny Guo study checkpointing?")
    assert parsed.authors == ["Lenny Guo"]


def test_doctor_finds_and_repair_drops_side_rows_whose_record_was_deleted_by_hand(filled, arxiv_papers):
    gone = by_arxiv(arxiv_papers, "0704.0016")
    with sqlite3.connect(filled.settings.database_path) as db:  # a record deleted by hand: its side rows stay
        db.execute("DELETE FROM papers WHERE id = ?", (gone.id,))
    report = filled.check_consistency()
    assert not report.ok and report.orphan_side_rows > 0
    assert f"{report.orphan_side_rows} author-name or title rows without a record (found)" in str(report)
    repaired = filled.repair()
    assert f"{report.orphan_side_rows} author-name or title rows without a record (fixed)" in str(repaired)
    after = filled.check_consistency()
    assert after.orphan_side_rows == 0 and after.missing_vectors == []


def test_a_damaged_roster_does_not_break_author_filters(roster_index, caplog):
    index = roster_index
    paper = Paper(title="Studies of sparse solvers", abstract="Sparse solvers.", authors=[Author(name="Lenny Guo")])
    index.upsert([paper])
    Roster.load(index.settings).add("Luanzheng Guo", aliases=["Lenny Guo"])
    with sqlite3.connect(index.settings.database_path) as db:  # a row changed by hand into no scholar
        db.execute("UPDATE scholars SET last_synced = '\"never\"'")
    hits = index.search("sparse solvers", k=5, filters=SearchFilters(authors=["Lenny Guo"]))
    assert [h.paper.id for h in hits] == [paper.id]
    assert "roster" in caplog.text


def test_year_and_venue_filters(filled):
    hits = filled.search("quantum", k=10, filters=SearchFilters(since=2008, until=2008))
    assert hits and all(h.paper.year == 2008 for h in hits)
    hits = filled.search("neutrino", k=10, filters=SearchFilters(venue="phys.rev.d"))
    assert hits and all(h.paper.venue == "Phys.Rev.D" for h in hits)
    old = filled.search("electron phonon", k=10, filters=SearchFilters(until=2005))
    assert [h.paper.year for h in old] == [2005]


@pytest.mark.parametrize(
    ("filters", "reason"),
    [
        (SearchFilters(since=2031), "No indexed paper is from 2031 or later (the newest is from 2009)."),
        (SearchFilters(until=1990), "No indexed paper is from 1990 or earlier (the oldest is from 2005)."),
        (SearchFilters(since=2021, until=2020), "The year range 2021-2020 is empty."),
        (SearchFilters(authors=["Zhao Zhang"]), "No indexed paper is by Zhao Zhang."),
        (SearchFilters(venue="NeurIPS"), "No indexed paper appeared in a venue matching 'NeurIPS'."),
        (SearchFilters(since=2009, authors=["Yurkin"]), "No indexed paper matches all of: since 2009, by Yurkin."),
    ],
)
def test_a_filter_that_empties_the_result_is_named(filled, filters, reason):
    outcome = filled.retrieve("dipole approximation", k=5, filters=filters)
    assert outcome.hits == [] and outcome.empty_reason == reason
    assert filled.explain_empty(filters) == reason
    assert outcome.notice == reason


def test_filters_that_match_have_no_empty_reason(filled):
    assert filled.explain_empty(SearchFilters(since=2008, authors=["Schekochihin"])) is None
    assert filled.explain_empty(None) is None


def test_near_duplicates_appear_once(filled, arxiv_papers, counting_encoder):
    original = by_arxiv(arxiv_papers, "0704.0016")
    # the same paper from another source: same title (other case/punctuation), no arXiv id
    copy = Paper(title=original.title.upper() + ".", authors=original.authors, abstract=original.abstract,
                 published="2008", doi="10.9999/copy-of-baryons")
    # and a record whose text differs by one word: cosine above 0.97, different title
    near = Paper(title=original.title + " revisited", authors=[Author(name="Someone Else")],
                 abstract=original.abstract, published="2009")
    filled.upsert([copy, near])
    vectors = counting_encoder.inner.encode([original.embedding_text, near.embedding_text])
    assert float(vectors[0] @ vectors[1]) > 0.97
    hits = filled.search("lifetime of doubly charmed baryons", k=5)
    ids = [h.paper.id for h in hits]
    assert len([i for i in ids if i in {original.id, copy.id, near.id}]) == 1
    assert len(ids) == 5


def test_bad_queries(filled):
    with pytest.raises(InputError, match="empty"):
        filled.search("   ")
    with pytest.raises(InputError, match="between 1 and"):
        filled.search("dipole", k=0)
    long = filled.retrieve("discrete dipole approximation " * 200, k=3)
    assert long.hits and long.notices and "2,000 characters" in long.notices[0]
    assert len(long.query) <= 2000
    for other_script in ("深度学习的图神经网络", "التعلم العميق للشبكات العصبية", "Квантовая механика"):
        hits = filled.search(other_script, k=3)
        assert len(hits) == 3 and all(h.lexical_score == 0.0 for h in hits)


def test_the_outcome_carries_the_query_vector_it_encoded_once(filled, counting_encoder):
    outcome = filled.retrieve("lifetime of doubly charmed baryons", k=5)
    assert counting_encoder.texts == ["lifetime of doubly charmed baryons"]  # nothing else was encoded
    vector = outcome.query_vector
    assert vector is not None
    stored = filled.dense.vectors([h.paper.id for h in outcome.hits])
    for hit in outcome.hits:  # the vector the dense scores were measured against
        assert float(stored[hit.paper.id] @ vector) == pytest.approx(hit.dense_score, abs=1e-5)
    assert filled.searcher.run("charmed baryons", 5, None, mode="lexical").query_vector is None


def test_empty_index(index):
    outcome = index.retrieve("anything at all", k=3)
    assert outcome.hits == [] and "No paper is indexed yet" in outcome.empty_reason


def test_parse_question_uses_indexed_names(filled):
    query, filters = filled.parse_question("light scattering by Yurkin since 2006")
    assert query == "light scattering" and filters.authors == ["Yurkin"] and filters.since == 2006
    query, filters = filled.parse_question("papers by Zhao Zhang on graphs")  # nobody indexed by that name
    assert filters.authors == [] and query == "papers by Zhao Zhang on graphs"
    assert filled.knows_venue("JHEP") and not filled.knows_venue("Nature")


# --- consistency -------------------------------------------------------------------------------


def test_consistency_check_and_repair(filled, arxiv_papers, counting_encoder):
    assert filled.search("dipole", k=1)  # builds the BM25 index
    assert filled.check_consistency().ok and filled.check_consistency().lexical_current
    lost = by_arxiv(arxiv_papers, "0704.0016")
    filled.dense.delete([lost.id])  # a vector lost behind our back
    stale = by_arxiv(arxiv_papers, "0704.0015")
    filled.dense.upsert([stale.id], np.stack([filled.dense.vectors([stale.id])[stale.id]]),
                        [{**record_metadata(stale), "embedding_hash": "old"}])  # a vector of an older text
    filled.dense.upsert(["doi:10.1/orphan"], np.asarray(counting_encoder.inner.encode(["orphan"])),
                        [{"title": "orphan", "embedding_hash": "x"}])
    shutil.rmtree(filled.settings.lexical_dir)

    report = filled.check_consistency()
    assert not report.ok
    assert report.missing_vectors == [lost.id] and report.stale_vectors == [stale.id]
    assert report.orphan_vectors == ["doi:10.1/orphan"] and report.lexical_current is False
    assert "1 records without a vector" in str(report)

    counting_encoder.reset()
    repaired = filled.repair()
    assert repaired.repaired and "fixed" in repaired.describe()
    assert sorted(counting_encoder.texts) == sorted([lost.embedding_text, stale.embedding_text])
    assert filled.check_consistency().ok
    assert filled.dense_search("lifetime of doubly charmed baryons", k=1)[0].paper.id == lost.id


def test_vector_index_lost_entirely_is_explained(filled, arxiv_papers):
    filled.dense.delete([p.id for p in arxiv_papers])
    outcome = filled.retrieve("zzzqqq xxyyzz", k=3)
    assert outcome.hits == [] and "doctor --repair" in outcome.empty_reason
    # lexical matches still come back, without a dense score
    hits = filled.search("doubly charmed baryons", k=1)
    assert hits[0].paper.arxiv_id == "0704.0016" and hits[0].dense_score is None


def test_warm_up_loads_everything_lazy(index_settings, arxiv_papers, counting_encoder):
    seeded = PaperIndex.open(index_settings, counting_encoder)
    seeded.upsert(arxiv_papers[:3])
    seeded.close()
    loads: list[str] = []

    def factory(settings):
        loads.append("loaded")
        return counting_encoder

    index = PaperIndex.open(index_settings, encoder_factory=factory)
    try:
        index.warm_up()
        assert loads == ["loaded"] and index.lexical.is_current()
        assert index.encoder is counting_encoder and loads == ["loaded"]
    finally:
        index.close()


def test_encoder_is_loaded_only_when_needed(index_settings, arxiv_papers, counting_encoder):
    loads: list[str] = []

    def factory(settings):
        loads.append("loaded")
        return counting_encoder

    seeded = PaperIndex.open(index_settings, counting_encoder)
    seeded.upsert(arxiv_papers[:3])
    seeded.close()
    index = PaperIndex.open(index_settings, encoder_factory=factory)
    try:
        assert index.count() == 3 and len(list(index.iter_papers())) == 3
        assert index.get(arxiv_papers[0].id) == arxiv_papers[0]
        assert index.lexical_search("diphoton", k=1) and loads == []
        assert index.search("diphoton", k=1) and loads == ["loaded"]
    finally:
        index.close()


def test_relevance_threshold_comes_from_calibration_or_settings(tmp_path):
    default = PaperIndex.open(make_settings(tmp_path / "a"))
    custom = PaperIndex.open(make_settings(tmp_path / "b", min_relevance=0.25))
    assert default.relevance_threshold == CALIBRATED_MIN_RELEVANCE and custom.relevance_threshold == 0.25
    default.close()
    custom.close()
