"""A scaled-out ingest: the records read once, split into parts, each part written by a job.

``split`` runs where the ingest is submitted: the files are read and their records deduped and
folded by id there, once for all parts (``pipeline.prepare_papers``), so no two parts hold the
same paper; the parts are of near-equal size, in order.

``write_part`` runs in a worker. It encodes the part's records *before* taking the writer lock
(the vectors land in the worker's embedding cache), then writes the part batch by batch with the
lock held for each batch's read-merge-write only (``pipeline.write_batches`` with a guard), so
several workers encode at once and take turns to write. Each batch reads the records as the
previous writer left them and merges into them exactly as one process would: the provenance
stays right whatever the order of the batches. A record whose merge changed its text is encoded
under the lock (a cache miss), as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from retrieval.ingest.pipeline import BATCH_SIZE, prepare_papers, write_batches
from retrieval.records.paper import Paper
from retrieval.results import IngestReport

if TYPE_CHECKING:
    from retrieval.assistant import Assistant
    from retrieval.index.paper_index import PaperIndex


def split(papers: Sequence[Paper], parts: int, *, batch_size: int = BATCH_SIZE) -> tuple[list[list[Paper]], IngestReport]:
    """``papers`` deduped once (``prepare_papers``) and cut into at most ``parts`` parts of
    near-equal size, in order (no more parts than batches of ``batch_size``); and the report so
    far (duplicates merged, warnings)."""
    unique, report = prepare_papers(papers)
    if not unique:
        return [], report
    count = min(max(1, parts), -(-len(unique) // batch_size))  # no part smaller than a batch needs to be
    per_part = -(-len(unique) // count)
    return [unique[start : start + per_part] for start in range(0, len(unique), per_part)], report


def encode_before_writing(index: PaperIndex, papers: Sequence[Paper], *, chunk: int = BATCH_SIZE) -> int:
    """Vectors of the records an upsert of ``papers`` would embed, computed now, without the
    writer lock, into the index's embedding cache (the ``Assistant``'s index embeds through one),
    where the locked upsert finds them. Returns how many records needed a vector."""
    ids = [paper.id for paper in papers]  # ``Paper.id`` is computed anew on every access
    stored = index.store.hashes(ids)
    fresh = [paper for paper_id, paper in zip(ids, papers, strict=True)
             if stored.get(paper_id, ("", ""))[1] != paper.embedding_hash]
    if fresh:
        index.check_encoder()  # vectors of another encoder: refused here, before any work
    for start in range(0, len(fresh), chunk):
        index.encoders.embed(fresh[start : start + chunk])
    return len(fresh)


def write_part(assistant: Assistant, papers: Sequence[Paper], *,
               say: Callable[[str], None] | None = None) -> IngestReport:
    """Write one part (records from ``split``): encoded first, then batch by batch under the
    writer lock (module docstring)."""
    from retrieval.storage.locks import hold_writer_lock

    index = assistant.index
    encoded = encode_before_writing(index, papers)
    if say is not None:
        say(f"{encoded} of {len(papers)} records encoded; writing")

    batches = -(-len(papers) // BATCH_SIZE)
    written = 0

    @contextmanager
    def locked() -> Iterator[None]:
        nonlocal written
        with hold_writer_lock(assistant.settings, "ingest", notice=say):
            yield
        written += 1
        if say is not None:
            say(f"batch {written}/{batches} written")

    report = IngestReport()
    write_batches(index, papers, report, guard=locked)
    return report
