"""Average-linkage agglomerative clustering of items on a similarity matrix.

The rule (``average_linkage``): start with one group per item, in item order; while two groups
are left, take the pair of groups whose average pairwise similarity is highest and, when that
average is at least ``threshold``, merge the later group of the pair into the earlier one (its
members appended, in their order); otherwise stop. Groups keep the position of their earlier
part, so the groups come out ordered by their first item. Averages that agree within
``TIE_TOLERANCE`` count as a tie, won by the pair that comes first in group order (earlier
first group, then earlier second group), so rounding never decides between equally good pairs.

``average_linkage`` keeps, for every pair of groups, the sum of its similarities (a merged
group's sums are the sums of its parts) and, for every group, the best average with a later
group; a merge only revisits the groups whose best partner changed. ``naive_average_linkage``
recomputes each pair's average from the matrix at every step: it is the definition, kept for
tests and as the baseline of ``bench/summarize_speed.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# Averages of cosine similarities closer than this are a tie (far above the rounding error of
# the running sums, far below any difference that says one pair is more alike).
TIE_TOLERANCE = 1e-9

Linkage = Callable[[np.ndarray, float], list[list[int]]]  # (similarity, threshold) -> groups


def average_linkage(similarity: np.ndarray, threshold: float) -> list[list[int]]:
    """Groups of item indices (see the module docstring) for a square, finite ``similarity``."""
    n = similarity.shape[0]
    position = np.arange(n)
    sums = np.array(similarity, dtype=np.float64)  # sums[i, j]: group i's rows against group j's columns
    sizes = np.ones(n, dtype=np.float64)
    alive = np.ones(n, dtype=bool)
    members: list[list[int]] = [[i] for i in range(n)]
    # means[i, j] (i < j, both alive): the average similarity of groups i and j; -inf elsewhere
    means = np.where(position[:, None] < position[None, :], sums, -np.inf)
    row_best = means.max(axis=1, initial=-np.inf)  # each group's best average with a later group
    for _ in range(n - 1):  # at most n - 1 merges
        best = float(row_best.max())
        if best < threshold:
            break
        floor = best - TIE_TOLERANCE
        a = int(np.argmax(row_best >= floor))
        b = int(np.argmax(means[a] >= floor))
        was_a, was_b = means[:, a].copy(), means[:, b].copy()
        sums[a] += sums[b]
        sums[:, a] += sums[:, b]
        sizes[a] += sizes[b]
        members[a].extend(members[b])
        alive[b] = False
        means[b] = -np.inf
        means[:, b] = -np.inf
        row_best[b] = -np.inf
        later, earlier = alive & (position > a), alive & (position < a)
        means[a] = np.where(later, sums[a] / (sizes[a] * sizes), -np.inf)
        means[:, a] = np.where(earlier, sums[:, a] / (sizes * sizes[a]), -np.inf)
        row_best[a] = means[a].max()
        # groups before b whose best partner was a or b are recomputed; the others keep theirs,
        # as a group's average with the merged a lies between its averages with a and with b
        stale = alive & (position < b) & (position != a) & ((row_best <= was_a) | (row_best <= was_b))
        if stale.any():
            row_best[stale] = means[stale].max(axis=1)
    return [members[i] for i in np.flatnonzero(alive)]


def naive_average_linkage(similarity: np.ndarray, threshold: float) -> list[list[int]]:
    """The same groups as ``average_linkage``, each step averaging every pair of groups afresh
    from ``similarity`` (cubic or worse in the number of items)."""
    groups: list[list[int]] = [[i] for i in range(similarity.shape[0])]
    while len(groups) > 1:
        pairs = [(a, b) for a in range(len(groups)) for b in range(a + 1, len(groups))]
        values = [float(similarity[np.ix_(groups[a], groups[b])].mean()) for a, b in pairs]
        best = max(values)
        if best < threshold:
            break
        a, b = next(pair for pair, value in zip(pairs, values, strict=True) if value >= best - TIE_TOLERANCE)
        groups[a] = groups[a] + groups[b]
        del groups[b]
    return groups
