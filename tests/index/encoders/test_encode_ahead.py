"""Encoding ahead in a child process: the parent's vectors bit for bit, and nothing lost when the child is not there.

Every test runs a real ``worker_process`` child over the session's int8 export (the encoder an
ingest on this machine kind uses), except the frame tests, which need no model.
"""

from __future__ import annotations

import copy
import io
import logging
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from retrieval.index.encoders import loading
from retrieval.index.encoders.encode_ahead import AheadEncoder, EncoderProcess, ahead_of, take_spare
from retrieval.index.encoders.onnx_runtime import OnnxEncoder
from retrieval.index.encoders.worker_process import (
    MAX_FRAME,
    FrameError,
    read_frame,
    start_encoding_process,
    write_frame,
)

TITLES = [
    "Checkpointing large language model fine-tuning on preemptible GPUs",
    "Optical interconnects for distributed machine-learning training",
    "A survey of provenance capture in scientific workflows",
    "Graph neural networks for I/O performance prediction",
    "Lossy compression of scientific floating-point data",
    "Scalable hyperparameter search with early stopping",
    "Federated learning over heterogeneous edge devices",
    "Detecting silent data corruption in HPC applications",
]


@pytest.fixture(scope="module")
def int8(onnx_cache: Path) -> OnnxEncoder:
    return loading.onnx_encoder(onnx_cache, "onnx-int8")


@pytest.fixture(scope="module")
def texts(abstracts: list[str]) -> list[str]:
    return [*TITLES, *abstracts, *(f"{title} (revisited)" for title in TITLES)]


@pytest.fixture(scope="module")
def expected(int8: OnnxEncoder, texts: list[str]) -> np.ndarray:
    return int8.encode(texts)


@pytest.fixture()
def process(int8: OnnxEncoder):
    started = EncoderProcess.start()
    started.load(int8)
    assert started.wait_ready(60), started.failure
    yield started
    started.close()


# --- the frames ----------------------------------------------------------------------------------


def test_frames_round_trip_and_a_clean_end_is_none():
    stream = io.BytesIO()
    write_frame(stream, {"op": "encode", "id": 3, "texts": ["α", "b\udc80"]})  # a lone surrogate too
    write_frame(stream, {"op": "vectors", "id": 3, "count": 1}, b"\x00" * 8)
    stream.seek(0)
    assert read_frame(stream) == ({"op": "encode", "id": 3, "texts": ["α", "b\udc80"]}, b"")
    assert read_frame(stream) == ({"op": "vectors", "id": 3, "count": 1}, b"\x00" * 8)
    assert read_frame(stream) is None


@pytest.mark.parametrize("raw, why", [
    (struct.pack(">II", 10, 0) + b'{"op"', "ended inside a frame"),
    (struct.pack(">II", MAX_FRAME + 1, 0), "over the"),
    (struct.pack(">II", 3, 0) + b"abc", "not JSON"),
    (struct.pack(">II", 2, 0) + b"[]", "no 'op'"),
    (b"\x00\x00", "ended inside a frame"),
])
def test_broken_frames_are_refused(raw: bytes, why: str):
    with pytest.raises(FrameError, match=why):
        read_frame(io.BytesIO(raw))


# --- the child's vectors -----------------------------------------------------------------------------


@pytest.mark.slow
def test_announced_texts_come_from_the_child_bit_for_bit(int8, process, texts, expected):
    ahead = AheadEncoder(int8, process, window=8, request_size=3)
    ahead.announce(texts)
    parts = [ahead.encode(texts[start : start + 5]) for start in range(0, len(texts), 5)]
    assert np.array_equal(np.vstack(parts), expected)
    assert (ahead.from_process, ahead.in_process) == (len(texts), 0)
    assert ahead.name == int8.name and ahead.dimension == int8.dimension


@pytest.mark.slow
def test_until_the_child_is_ready_texts_are_encoded_here(int8, texts, expected):
    process = EncoderProcess.start()
    try:
        process.load(int8)
        ahead = AheadEncoder(int8, process, window=4, request_size=2)
        ahead.announce(texts)
        first = ahead.encode(texts[:2]) if not process.ready else None  # asked before the child is ready
        assert process.wait_ready(60), process.failure
        rest = np.vstack([ahead.encode(texts[start : start + 3]) for start in range(2, len(texts), 3)])
    finally:
        process.close()
    if first is not None:
        assert np.array_equal(first, expected[:2])
        assert ahead.in_process == 2  # never waited for
    assert np.array_equal(rest, expected[2:])
    assert ahead.from_process == len(texts) - 2  # sent from where the pipeline was, once ready


@pytest.mark.slow
def test_texts_not_announced_or_skipped_are_encoded_here(int8, process, texts, expected):
    ahead = AheadEncoder(int8, process, window=4, request_size=2)
    ahead.announce(texts[:12])
    # the pipeline skips 0-5 (their records kept their vectors), asks for 6-7 and for two texts
    # it never announced; then jumps past the window (10-11 were never sent)
    asked = [texts[6], texts[7], texts[14], texts[15]]
    assert np.array_equal(ahead.encode(asked), expected[[6, 7, 14, 15]])
    assert np.array_equal(ahead.encode(texts[10:12]), expected[10:12])
    assert ahead.from_process + ahead.in_process == 6
    assert ahead.in_process >= 2  # the two never announced


@pytest.mark.slow
def test_a_child_that_dies_is_replaced_by_this_process(int8, process, texts, expected, caplog):
    ahead = AheadEncoder(int8, process, window=4, request_size=2)
    ahead.announce(texts)
    first = ahead.encode(texts[:2])
    os.kill(process.pid, signal.SIGKILL)
    with caplog.at_level(logging.WARNING, logger="retrieval.index.encoders.encode_ahead"):
        rest = [ahead.encode(texts[start : start + 3]) for start in range(2, len(texts), 3)]
    assert np.array_equal(np.vstack([first, *rest]), expected)
    assert ahead.in_process > 0
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 1 and "encoding in this process instead" in warnings[0]


@pytest.mark.slow
def test_a_child_that_cannot_load_the_model_says_why(int8, texts, expected, tmp_path, caplog):
    broken = copy.copy(int8)
    broken.model_file = tmp_path / "model.onnx"
    broken.model_file.write_bytes(b"not a model")
    process = EncoderProcess.start()
    try:
        process.load(broken)
        ahead = AheadEncoder(int8, process)
        ahead.announce(texts[:4])
        assert not process.wait_ready(60)
        with caplog.at_level(logging.WARNING, logger="retrieval.index.encoders.encode_ahead"):
            assert np.array_equal(ahead.encode(texts[:4]), expected[:4])
    finally:
        process.close()
    assert ahead.in_process == 4
    assert "could not load the encoder" in caplog.text and "model.onnx" in caplog.text


@pytest.mark.slow
def test_a_stalled_child_is_given_up_and_killed(int8, process, texts, expected):
    ahead = AheadEncoder(int8, process, window=4, request_size=2, stall_seconds=1.0)
    ahead.announce(texts)
    assert np.array_equal(ahead.encode(texts[:2]), expected[:2])
    os.kill(process.pid, signal.SIGSTOP)
    started = time.monotonic()
    # texts 2-5 were with the child before it stopped, and it may have answered them already (it did,
    # on a busy host, when the parent was slow to send the signal); asking for them hands it texts
    # 6-9, which it was sent only after it stopped: the next call waits for those, and gives up
    assert np.array_equal(ahead.encode(texts[2:6]), expected[2:6])
    assert np.array_equal(ahead.encode(texts[6:20]), expected[6:20])
    assert time.monotonic() - started < 30
    assert process.failure is not None and "did not answer" in process.failure
    assert np.array_equal(ahead.encode(texts[20:22]), expected[20:22])  # no more waiting


@pytest.mark.slow
def test_ctrl_c_is_the_parents_to_handle(int8, process, texts, expected):
    # a terminal sends Ctrl-C to its foreground process group: the child is not in it
    assert os.getpgid(process.pid) != os.getpgid(0)
    ahead = AheadEncoder(int8, process)
    ahead.announce(texts)
    assert np.array_equal(ahead.encode(texts[:2]), expected[:2])  # the child is running its loop
    os.kill(process.pid, signal.SIGINT)  # and a SIGINT sent to it alone is ignored
    assert np.array_equal(ahead.encode(texts[2:]), expected[2:])
    assert ahead.in_process == 0


@pytest.mark.slow
def test_closing_ends_the_child_with_work_still_queued(int8, process, texts):
    ahead = AheadEncoder(int8, process, window=len(texts))
    ahead.announce(texts * 1)
    started = time.monotonic()
    process.close()
    assert time.monotonic() - started < 5
    assert process._process.returncode == 0  # it exited on its own, not killed
    assert ahead.encode(texts[:1]).shape == (1, int8.dimension)  # after closing: here, quietly


@pytest.mark.slow
def test_ahead_of_yields_other_encoders_as_they_are_and_closes_a_given_child(texts):
    class Plain:
        name, dimension = "plain", 3

        def encode(self, batch):
            return np.ones((len(batch), 3), dtype=np.float32)

    plain = Plain()
    process = EncoderProcess.start()
    with ahead_of(plain, texts, process) as encoder:
        assert encoder is plain
    assert process._process.poll() is not None


@pytest.mark.slow
def test_a_spare_is_taken_once(int8, texts, expected):
    start_encoding_process()
    start_encoding_process()  # one is enough
    spare = take_spare()
    assert spare is not None and take_spare() is None
    with ahead_of(int8, texts, spare) as encoder:
        assert spare.wait_ready(60), spare.failure
        assert isinstance(encoder, AheadEncoder)
        assert np.array_equal(encoder.encode(texts), expected)
        assert encoder.from_process == len(texts)
    assert spare.failure is not None  # closed


def _running(pid: int) -> bool:
    """The process exists and is not a zombie (an orphan's exit may wait for init to reap it)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return False
    return "\nState:\tZ" not in status


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads process states from /proc")
def test_the_child_leaves_with_a_killed_parent(onnx_cache: Path):
    parent_code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from retrieval.index.encoders import loading\n"
        "from retrieval.index.encoders.encode_ahead import AheadEncoder, EncoderProcess\n"
        "encoder = loading.onnx_encoder(Path(sys.argv[1]), 'onnx-int8')\n"
        "process = EncoderProcess.start()\n"
        "process.load(encoder)\n"
        "assert process.wait_ready(120), process.failure\n"
        "ahead = AheadEncoder(encoder, process)\n"
        "ahead.announce([f'text number {n}' for n in range(5000)])  # the child is busy when the parent dies\n"
        "print(process.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(root)}
    parent = subprocess.Popen([sys.executable, "-c", parent_code, str(onnx_cache)], stdout=subprocess.PIPE,
                              text=True, env=env)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _running(child)
        parent.kill()  # SIGKILL: no cleanup of its own runs
        parent.wait()
        deadline = time.monotonic() + 15
        while _running(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _running(child), "the encoding process outlived its killed parent"
    finally:
        parent.kill()


def test_no_python_to_start_means_no_child_and_no_error(monkeypatch: pytest.MonkeyPatch):
    from retrieval.index.encoders import worker_process

    monkeypatch.setattr(sys, "executable", "")
    with pytest.raises(OSError, match="no Python executable"):
        worker_process.spawn()
    worker_process.start_encoding_process()  # not an error: the ingest encodes in its own process
    assert worker_process.take_started_process() is None
