"""Where the documents of a BM25 snapshot go when some change: pure functions over index positions.

A build lists its documents in id order (the record store's, bytewise, which is Python's order of
``str``); ``lexical.LexicalIndex`` follows the store's change feed by removing the documents
whose records changed or went and inserting the changed ones where a build would have put them.
``merged_sources`` says, for every document of the result, which document of the old snapshot it
is (or -1 for one given anew), and ``rearranged`` lays out a per-document list that way, copying
the unchanged runs as slices: the work is linear in the number of changes, not in the number of
documents, apart from the array operations.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

_T = TypeVar("_T")


def merged_sources(old_ids: Sequence[str], removed: Sequence[int], added: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(sources, added_at)`` of the documents ``old_ids`` (sorted) without the positions
    ``removed`` and with the ids ``added`` (sorted, none of them among the ids kept).

    ``sources[q]`` is the old position of the result's document ``q``, or -1 for an added one;
    ``added_at[j]`` the position of ``added[j]`` in the result. An added id equal to a removed one
    takes its place.
    """
    gone = np.unique(np.asarray(removed, dtype=np.int64))
    insert_at = np.fromiter((bisect_left(old_ids, paper_id) for paper_id in added), dtype=np.int64, count=len(added))
    added_at = insert_at - np.searchsorted(gone, insert_at, side="left") + np.arange(len(added), dtype=np.int64)
    size = len(old_ids) - len(gone) + len(added)
    sources = np.full(size, -1, dtype=np.int64)
    kept = np.ones(len(old_ids), dtype=bool)
    kept[gone] = False
    old = np.ones(size, dtype=bool)
    old[added_at] = False
    sources[old] = np.flatnonzero(kept)
    return sources, added_at


def rearranged(items: Sequence[_T], sources: np.ndarray, fresh: Sequence[_T]) -> list[_T]:
    """``items[sources[q]]`` for every ``q`` whose source is an old position, the next of ``fresh``
    for every -1; runs of consecutive old positions are copied as one slice."""
    if len(sources) == 0:
        return []
    if len(fresh) != int(np.count_nonzero(sources < 0)):
        raise ValueError(f"{int(np.count_nonzero(sources < 0))} documents to fill, {len(fresh)} given")
    breaks = (sources[1:] != sources[:-1] + 1) | (sources[1:] < 0) | (sources[:-1] < 0)
    starts = np.flatnonzero(np.concatenate(([True], breaks))).tolist()
    ends = [*starts[1:], len(sources)]
    result: list[_T] = []
    given = iter(fresh)
    for start, end in zip(starts, ends, strict=True):
        first = int(sources[start])
        if first < 0:
            result.append(next(given))  # a -1 is a run of its own
        else:
            result.extend(items[first : first + end - start])
    return result
