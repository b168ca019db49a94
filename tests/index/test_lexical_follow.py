"""A BM25 index that follows the record store's change feed equals a build from scratch.

Random writes, updates and removals (hypothesis) on SQLite and a real PostgreSQL
(``database_url``): after each, a follower (an index kept in memory, as a replica holds it) and a
second process's index (loading the saved build and following from it) give the documents, fields,
vocabulary and scores, bit for bit, and the search results of a build from scratch, and neither
rebuilds. ``lexical_follow``'s positions are checked against a plain sort.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval.config import Settings
from retrieval.index.lexical import LexicalIndex, LexicalSnapshot
from retrieval.index.lexical_follow import merged_sources, rearranged
from retrieval.records.paper import Author, Paper
from retrieval.storage.records import RecordStore

from .test_term_counts import _assert_same_index

WORDS = ["graph", "neural", "quantum", "sparse", "solver", "quokka", "深度学习", "café", "spectra", "lattice"]
NAMES = ["Ada Lovelace", "Alan Turing", "Zhang Wei", "Émilie du Châtelet"]
QUERIES = ["graph neural", "quantum lattice spectra", "quokka", "café", "深度学习", "Zhang", "sparse solver solver"]


class Counting(LexicalIndex):
    """A ``LexicalIndex`` that counts its builds from the store's records."""

    builds = 0

    def _build(self, digest: str, generation: int, *, reuse: bool = True) -> LexicalSnapshot:
        self.builds += 1
        return super()._build(digest, generation, reuse=reuse)


@pytest.fixture
def store(tmp_path: Path, database_url: str | None) -> Iterator[RecordStore]:
    with RecordStore.open(Settings(_env_file=None, data_dir=tmp_path / "data", database_url=database_url)) as opened:
        yield opened


texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
papers = st.builds(
    lambda n, title, abstract, names, venue, year: Paper(
        title=title, abstract=abstract, authors=[Author(name=name) for name in names], venue=venue, year=year,
        arxiv_id=f"2401.{n:05d}"),
    st.integers(0, 11), texts, st.none() | texts, st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
    st.none() | st.sampled_from(["Phys. Rev. B", "NeurIPS"]), st.none() | st.integers(1990, 2026))
writes = st.lists(st.tuples(st.lists(papers, max_size=4), st.lists(st.integers(0, 11), max_size=3)),
                  min_size=1, max_size=4)


def _assert_equal(followed: LexicalSnapshot, scratch: LexicalSnapshot) -> None:
    if len(scratch) == 0:
        assert len(followed) == 0 and followed.retriever is None
        return
    _assert_same_index(followed, scratch)
    for query in QUERIES:
        assert followed.search(query, 20) == scratch.search(query, 20), query
        got, want = followed.score_all(query), scratch.score_all(query)
        assert (got is None) == (want is None), query
        if got is not None and want is not None:
            assert got.bm25.tobytes() == want.bm25.tobytes() and got.coverage.tobytes() == want.coverage.tobytes()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=writes)
def test_following_the_feed_equals_a_build_from_scratch(tmp_path_factory: pytest.TempPathFactory,
                                                        store: RecordStore,
                                                        writes: list[tuple[list[Paper], list[int]]]) -> None:
    folder = tmp_path_factory.mktemp("replica")
    follower = Counting(folder / "lexical", store)
    follower.current()
    for put, delete in writes:
        store.write(put=put, delete=[f"arxiv:2401.{n:05d}" for n in delete])
        followed = follower.current()
        assert followed.generation == store.generation()
        scratch = LexicalIndex(tmp_path_factory.mktemp("scratch"), store).rebuild(from_scratch=True)
        _assert_equal(followed, scratch)
    assert follower.builds == 1  # the first one only: every write after it was followed
    restarted = Counting(folder / "lexical", store)  # another process on this data dir: saved build + feed
    _assert_equal(restarted.current(), scratch)
    assert restarted.builds == 0


def test_replicas_with_data_dirs_of_their_own_follow_one_store(tmp_path: Path, store: RecordStore) -> None:
    """Two replicas share the store (each its own data dir); one's writes reach the other's index."""
    first, second = Counting(tmp_path / "one" / "lexical", store), Counting(tmp_path / "two" / "lexical", store)
    store.put_many([Paper(title=f"Sparse solver number {n}", arxiv_id=f"2401.{n:05d}") for n in range(20)])
    assert len(first.current()) == len(second.current()) == 20
    store.write(put=[Paper(title="Quokka spectra", arxiv_id="2401.00100")], delete=["arxiv:2401.00003"])
    for replica in (first, second):
        snapshot = replica.current()
        assert snapshot.search("quokka", 3)[0][0] == "arxiv:2401.00100" and "arxiv:2401.00003" not in snapshot.ids
        assert replica.builds == 1


@given(old=st.sets(st.integers(0, 60)), removed=st.sets(st.integers(0, 60)), added=st.sets(st.integers(0, 60)))
def test_merged_sources_put_each_document_where_a_sort_would(old: set[int], removed: set[int], added: set[int]) -> None:
    old_ids = sorted(f"id{n:03d}" for n in old)
    gone = sorted(position for position, paper_id in enumerate(old_ids) if int(paper_id[2:]) in removed)
    kept = {old_ids[position] for position in range(len(old_ids)) if position not in gone}
    new_ids = sorted(f"id{n:03d}" for n in added if f"id{n:03d}" not in kept)
    sources, added_at = merged_sources(old_ids, gone, new_ids)
    result = rearranged(old_ids, sources, new_ids)
    assert result == sorted(kept | set(new_ids))
    assert [result[position] for position in added_at.tolist()] == new_ids
    assert all(old_ids[source] == paper_id for source, paper_id in zip(sources.tolist(), result, strict=True)
               if source >= 0)
    assert np.count_nonzero(sources < 0) == len(new_ids)


def test_rearranged_wants_one_value_per_new_document() -> None:
    with pytest.raises(ValueError, match="2 documents to fill, 1 given"):
        rearranged(["a", "b"], np.array([-1, 0, -1]), ["x"])


def test_checkpoint_saves_what_was_followed_so_the_next_process_follows_nothing(tmp_path: Path,
                                                                                   store: RecordStore) -> None:
    """A repair ends with ``checkpoint``: the build on disk is the store's state, not the one before
    the followed changes (fewer than ``save_after``, which alone would leave it behind)."""
    store.put_many([Paper(title=f"Sparse solver number {n}", arxiv_id=f"2401.{n:05d}") for n in range(20)])
    index = Counting(tmp_path / "lexical", store)
    index.current()
    store.write(put=[Paper(title="Quokka spectra", arxiv_id="2401.00100"),
                     Paper(title="Lattice spectra", arxiv_id="2401.00101")], delete=["arxiv:2401.00003"])
    index.current()
    manifest_before = index._read_manifest()
    assert manifest_before is not None and manifest_before["documents"] == 20  # followed in memory only
    index.checkpoint()
    manifest = index._read_manifest()
    assert manifest is not None and manifest["documents"] == 21 and manifest["generation"] == store.generation()
    assert manifest["digest"] == store.digest()
    restarted = Counting(tmp_path / "lexical", store)
    snapshot = restarted.current()
    assert restarted.builds == 0 and "arxiv:2401.00100" in snapshot.ids and "arxiv:2401.00003" not in snapshot.ids
    assert restarted._unsaved == 0  # loaded at the store's generation: nothing to follow
    build = manifest["build"]
    index.checkpoint()  # already saved: nothing written again
    assert index._read_manifest()["build"] == build  # type: ignore[index]
