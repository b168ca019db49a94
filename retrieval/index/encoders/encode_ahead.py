"""Encoding ahead in a child process: an ingest's texts are encoded while the pipeline does the rest.

Inside one process the work around the encoder (merging, the record store, Chroma's upsert,
BM25) cannot overlap it: the encoder's sessions need the GIL after every run, and embedded
Chroma's upsert holds the GIL for the whole call. A child process has its own GIL
(``worker_process``). ``AheadEncoder`` is told, in order, every text an ingest will need
(``announce``); it keeps the child a bounded window ahead of what the pipeline has asked for,
and ``encode`` returns the child's vectors. The vectors are the parent's own ``OnnxEncoder``'s,
bit for bit (same graph file and options; int8 runs one text at a time), so nothing downstream
changes: cache keys, the index's encoder name, the mixing guard.

Nothing is lost when the child is not there: a text the child was not given (a merge changed
it), a request the child failed, or every text after the child died, stalled or could not load
the model, is encoded in this process by the same encoder, with one warning. Figures and the
reasoning behind the window: ``docs/encoders.md``, "Encoding ahead in a child process".

``worker_process.start_encoding_process`` starts a child before the caller knows whether it
will need one, so that its start-up overlaps the caller's own imports (``paperbot ingest`` does
this first thing); ``take_spare`` hands it to the next ingest.
"""

from __future__ import annotations

import logging
import subprocess
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from typing import IO, Any

import numpy as np

from retrieval.index.encoders.base import DIMENSION, Encoder
from retrieval.index.encoders.onnx_runtime import OnnxEncoder
from retrieval.index.encoders.worker_process import (
    CLOSE_SECONDS,
    VECTOR_DTYPE,
    FrameError,
    end,
    read_frame,
    spawn,
    take_started_process,
    write_frame,
)

log = logging.getLogger(__name__)

WINDOW = 256  # texts sent to the child beyond the furthest one the pipeline has asked for
REQUEST_SIZE = 64  # texts per request (one frame of vectors back)
STALL_SECONDS = 120.0  # waiting this long for one reply gives the child up


class EncodingProcessError(RuntimeError):
    """The child could not encode (it failed a request, stopped, stalled or could not load)."""


class EncoderProcess:
    """A ``worker_process`` child and a thread reading its replies into futures."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._process = process
        self._requests: IO[bytes] = process.stdin
        self._lock = threading.Lock()
        self._pending: dict[int, tuple[Future[np.ndarray], int]] = {}  # request id -> (future, number of texts)
        self._next_id = 0
        self._failure: str | None = None
        self._loaded = False
        self._ready = threading.Event()  # the child has made its encoder
        self._reader = threading.Thread(target=self._read, args=(process.stdout,), name="encoder-process-replies",
                                        daemon=True)
        self._reader.start()

    @classmethod
    def start(cls) -> EncoderProcess:
        """Start a child (``worker_process.spawn``). Raises ``OSError``."""
        return cls(spawn())

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def ready(self) -> bool:
        """The child has made the encoder ``load`` asked for, and encodes what it is sent."""
        return self._ready.is_set() and self._failure is None

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the child is ``ready`` (False: it failed, or ``timeout`` seconds passed)."""
        self._ready.wait(timeout)
        return self.ready

    @property
    def failure(self) -> str | None:
        """Why the child is of no more use (None while it is)."""
        return self._failure

    def load(self, encoder: OnnxEncoder) -> None:
        """Have the child make ``encoder`` again (same graph file, same options); once."""
        if self._loaded:
            raise RuntimeError("the encoding process has already loaded an encoder")
        self._loaded = True
        message = {"op": "load", "model_file": str(encoder.model_file), "name": encoder.name,
                   "options": encoder.options}
        self._send(message)

    def submit(self, texts: Sequence[str]) -> Future[np.ndarray]:
        """The vectors of ``texts`` (float32, one row each), once the child has encoded them."""
        future: Future[np.ndarray] = Future()
        with self._lock:
            if self._failure is not None:
                future.set_exception(EncodingProcessError(self._failure))
                return future
            self._next_id += 1
            request = self._next_id
            self._pending[request] = (future, len(texts))
        self._send({"op": "encode", "id": request, "texts": list(texts)})
        return future

    def _send(self, message: dict[str, Any]) -> None:
        try:
            write_frame(self._requests, message)  # type: ignore[arg-type]  # a binary pipe
        except (OSError, ValueError) as exc:  # the child is gone (a broken or closed pipe)
            self.give_up(f"the encoding process cannot be reached ({exc})")

    def _read(self, replies: IO[bytes]) -> None:
        why = None
        try:
            while (frame := read_frame(replies)) is not None:  # type: ignore[arg-type]
                message, body = frame
                if message["op"] == "ready":
                    self._ready.set()
                    continue
                if message["op"] == "error" and "id" not in message:
                    why = f"the encoding process could not load the encoder ({message.get('message')})"
                    break
                with self._lock:
                    future, count = self._pending.pop(int(message["id"]))
                if message["op"] == "error":
                    future.set_exception(EncodingProcessError(str(message.get("message"))))
                    continue
                vectors = np.frombuffer(body, dtype=VECTOR_DTYPE)
                if int(message.get("count", -1)) != count or vectors.size != count * DIMENSION:
                    raise FrameError(f"{vectors.size:,} floats for {count} texts")
                future.set_result(vectors.reshape(count, DIMENSION).astype(np.float32, copy=False))
        except (FrameError, KeyError, ValueError, TypeError, OSError) as exc:
            why = f"the encoding process sent a broken reply ({exc})"
        self.give_up(why or f"the encoding process stopped (exit code {self._process.poll()})")

    def give_up(self, why: str) -> None:
        """Stop using the child: every waiting request fails with ``why``, later ones at once."""
        with self._lock:
            if self._failure is None:
                self._failure = why
            waiting = list(self._pending.values())
            self._pending.clear()
        for future, _ in waiting:
            if not future.done():
                future.set_exception(EncodingProcessError(why))
        self._ready.set()  # nobody waits for a child that will not be ready
        if self._process.poll() is None and why != _CLOSED:
            self._process.kill()

    def close(self) -> None:
        """End the child (``worker_process.end``): it exits, dropping requests still queued."""
        with self._lock:
            if self._failure is None:
                self._failure = _CLOSED
        end(self._process)
        self._reader.join(CLOSE_SECONDS)
        self.give_up(_CLOSED)


_CLOSED = "the encoding process was closed"


class AheadEncoder:
    """An ``Encoder`` whose announced texts come from an ``EncoderProcess``, the rest from ``local``.

    ``announce`` the texts in the order the pipeline will ask for them; at most ``window`` texts
    beyond the furthest one asked for are with the child at any time, which bounds the memory
    of both and what is wasted when the pipeline needs fewer texts than announced (a text the
    pipeline skips is never waited for). Until the child has made its encoder (a few tenths of
    a second), texts asked for are encoded here rather than waited for, and the child is sent
    texts from where the pipeline then is; so is the part of one call beyond the window (the
    pipeline asks for 64 at a time). For one thread: the ingest that announced the texts.
    """

    def __init__(self, local: Encoder, process: EncoderProcess, *, window: int = WINDOW,
                 request_size: int = REQUEST_SIZE, stall_seconds: float = STALL_SECONDS) -> None:
        self.name = local.name
        self.dimension = local.dimension
        self._local = local
        self._process = process
        self._window = window
        self._request_size = request_size
        self._stall_seconds = stall_seconds
        self._announced: list[str] = []
        self._position: dict[str, int] = {}
        self._sent = 0  # announced texts handed to the child so far
        self._passed = 0  # announced texts before this position were asked for, or skipped
        self._slots: dict[str, tuple[Future[np.ndarray], int]] = {}  # text -> its request, its row there
        self._warned = False
        self.from_process = 0  # vectors the child made
        self.in_process = 0  # vectors ``local`` made

    @property
    def process(self) -> EncoderProcess:
        return self._process

    def announce(self, texts: Sequence[str]) -> None:
        """Texts the pipeline will ask for, in that order (repeats and known ones are ignored)."""
        for text in texts:
            if text not in self._position:
                self._position[text] = len(self._announced)
                self._announced.append(text)
        self._send()

    def _send(self) -> None:
        if not self._process.ready:
            return
        while (self._process.failure is None and self._sent < len(self._announced)
               and self._sent - self._passed < self._window):
            chunk = self._announced[self._sent : self._sent + self._request_size]
            future = self._process.submit(chunk)
            for row, text in enumerate(chunk):
                self._slots[text] = (future, row)
            self._sent += len(chunk)

    def _pass(self, upto: int) -> None:
        """Everything announced before ``upto`` was asked for or will not be: forget it, send more."""
        if upto <= self._passed:
            return
        for text in self._announced[self._passed : upto]:
            self._slots.pop(text, None)
        self._passed = upto
        self._sent = max(self._sent, upto)
        self._send()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self._warn_once(self._process.failure)
        self._send()  # the child may have become ready since the last call
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        waiting: list[tuple[int, Future[np.ndarray], int]] = []
        local_rows: list[int] = []
        furthest = -1
        for i, text in enumerate(texts):
            slot = self._slots.pop(text, None)
            furthest = max(furthest, self._position.get(text, -1))
            if slot is None:
                local_rows.append(i)
            else:
                waiting.append((i, *slot))
        self._pass(furthest + 1)  # before waiting: the child gets its next requests now
        for i, future, row in waiting:
            try:
                out[i] = future.result(timeout=self._stall_seconds)[row]
                self.from_process += 1
            except FutureTimeout:
                self._process.give_up(f"the encoding process did not answer for {self._stall_seconds:.0f} s")
                self._warn_once(self._process.failure)
                local_rows.append(i)
            except EncodingProcessError as exc:
                self._warn_once(str(exc))
                local_rows.append(i)
        if local_rows:
            out[local_rows] = self._local.encode([texts[i] for i in local_rows])
            self.in_process += len(local_rows)
        return out

    def _warn_once(self, why: str | None) -> None:
        """One warning per ingest: the child's failure (texts it was never given need none)."""
        if why and why != _CLOSED and not self._warned:
            self._warned = True
            log.warning("%s; encoding in this process instead (the same vectors, more slowly).", why)


def take_spare() -> EncoderProcess | None:
    """The child ``worker_process.start_encoding_process`` started in advance, if any; the caller's to close."""
    started = take_started_process()
    return None if started is None else EncoderProcess(started)


@contextmanager
def ahead_of(local: Encoder, texts: Sequence[str], process: EncoderProcess | None) -> Iterator[Encoder]:
    """``local`` as an ``AheadEncoder`` with ``texts`` announced, for the block; the process closed after.

    ``process`` None starts one. Only an ``OnnxEncoder`` can be made again in the child; any
    other encoder (torch, a test's) is yielded as it is, and a given process is closed unused.
    """
    if not isinstance(local, OnnxEncoder):
        if process is not None:
            process.close()
        yield local
        return
    if process is None:
        try:
            process = EncoderProcess.start()
        except OSError as exc:
            log.warning("The encoding process could not be started (%s); encoding in this process.", exc)
            yield local
            return
    try:
        process.load(local)
        ahead = AheadEncoder(local, process)
        ahead.announce(texts)
        yield ahead
    finally:
        process.close()
