"""Bulk work (an ingest, a BM25 build) without full garbage collections over older objects.

An ingest allocates many objects that live until it ends (parsed records, their tokens), so
the collector's young generations keep overflowing, and now and then that triggers a full
collection, which walks *every* object of the process: the imported modules, the encoder,
pydantic's schemas, chromadb. Over the 40 real publication lists that was one or two full
collections of 0.08-0.1 s each, about 2 % of the ingest, all of it while the encoder's threads
waited for the GIL. ``gc.freeze`` moves the objects alive when the work starts out of the
collector's reach; ``gc.unfreeze`` hands them back when it ends, so a long-running process (the
Slack bot) keeps collecting them as before and leaks nothing. Garbage made during the work is
collected as usual.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0  # blocks running now, in any thread: the freeze ends with the last of them


@contextmanager
def older_objects_frozen() -> Iterator[None]:
    """Within the block, full collections skip every object that was alive when the first
    running block began. Nested and concurrent blocks share one freeze."""
    global _depth
    with _lock:
        if _depth == 0:
            gc.freeze()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.unfreeze()
