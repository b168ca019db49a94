"""How long a test waits for real work on this host.

Tests wait for things that take real time (a ``paperbot`` subprocess, a Slack answer, an ingest of
the 40 lists); the waits are set for the 2-core hosts the suite runs on. A slower host (an
emulated CPU: ``bench/simd_hosts.sh``, which sets a factor of 10; a loaded machine) sets
``PAPERBOT_TESTS_TIME_SCALE`` to multiply them. What a test asserts is unchanged: only how long it
waits before it calls a wait a failure. The CPU-time budgets of the few tests that guard an
algorithm against quadratic blow-ups (parsing, grouping, merging) scale too: an emulated CPU is
slower per instruction. Product timeouts a test sets on purpose (a Chroma timeout against a
server that never answers) are not waits and are not scaled.
"""

from __future__ import annotations

import math
import os

TIME_SCALE = "PAPERBOT_TESTS_TIME_SCALE"


def time_scale() -> float:
    """``PAPERBOT_TESTS_TIME_SCALE`` as a number ≥ 1 (1 when unset or blank); ValueError naming the
    variable when it is not such a number."""
    raw = os.environ.get(TIME_SCALE, "").strip()
    if not raw:
        return 1.0
    try:
        scale = float(raw)
    except ValueError:
        scale = math.nan
    if not math.isfinite(scale) or scale < 1:
        raise ValueError(f"{TIME_SCALE}={raw!r}: expected a number of at least 1 (how many times longer "
                         "tests wait on this host), e.g. 3")
    return scale


def patience(seconds: float) -> float:
    """``seconds`` of waiting, times this host's ``time_scale()``."""
    return seconds * time_scale()
