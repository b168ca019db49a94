"""``older_objects_frozen``: full collections skip older objects during bulk work, and only then."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

from retrieval.gc_pause import older_objects_frozen


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle() -> weakref.ref[_Node]:
    first, second = _Node(), _Node()
    first.other, second.other = second, first  # only the cycle collector frees these
    return weakref.ref(first)


@pytest.fixture
def no_automatic_collection():
    """Only the test's own ``gc.collect`` calls run (an automatic one could free ``older`` early)."""
    gc.disable()
    yield
    gc.enable()


def test_objects_alive_before_are_frozen_then_handed_back(no_automatic_collection):
    assert gc.get_freeze_count() == 0
    older = _cycle()  # garbage already, but alive (not yet collected) when the block starts
    with older_objects_frozen():
        assert gc.get_freeze_count() > 0
        newer = _cycle()
        gc.collect()
        assert newer() is None  # garbage made during the work is collected as usual
        assert older() is not None  # frozen: out of the collector's reach
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert older() is None  # handed back: nothing leaks


def test_nested_and_concurrent_blocks_share_one_freeze_and_errors_end_it():
    inside, release = threading.Event(), threading.Event()

    def worker() -> None:
        with older_objects_frozen():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=worker)
    with pytest.raises(RuntimeError):
        with older_objects_frozen():
            thread.start()
            assert inside.wait(10)
            with older_objects_frozen():
                pass
            assert gc.get_freeze_count() > 0  # the nested block's end did not unfreeze
            raise RuntimeError("the work failed")
    assert gc.get_freeze_count() > 0  # the other thread's block still runs
    release.set()
    thread.join(10)
    assert gc.get_freeze_count() == 0


def test_decorated_functions_freeze_while_they_run():
    seen: list[int] = []

    @older_objects_frozen()
    def bulk() -> None:
        seen.append(gc.get_freeze_count())

    bulk()
    bulk()
    assert all(count > 0 for count in seen) and len(seen) == 2 and gc.get_freeze_count() == 0
