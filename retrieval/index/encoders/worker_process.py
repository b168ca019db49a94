"""The encoding process: an ``OnnxEncoder`` in a child process of its own, and the frames it speaks.

Started by ``spawn`` (as ``python -m retrieval.index.encoders.worker_process``) for
``encode_ahead.EncoderProcess``; ``start_encoding_process`` starts one before it is needed. Why a
process: inside the ingesting process the encoder's sessions wait for the GIL after every run
while the pipeline runs Python or embedded Chroma's upsert (which holds the GIL for the whole
call), so the work around the encoder adds to its time. A child has its own GIL
(``docs/encoders.md``, "Encoding ahead in a child process (kept)").

The child imports only numpy, onnxruntime and the tokenizer (no pydantic, no chromadb), first
thing, so that a parent which starts it early (``paperbot ingest`` does, before its own imports)
finds it ready. Then, on its standard input and output, in frames (``write_frame``):

* parent -> child ``{"op": "load", "model_file": ..., "name": ..., "options": {...}}`` (the
  parent's ``OnnxEncoder.options``)
  once; the child answers ``{"op": "ready", "name": ...}``, or ``{"op": "error", "message": ...}``
  and exits;
* parent -> child ``{"op": "encode", "id": N, "texts": [...]}``; the child answers, in the order
  asked, ``{"op": "vectors", "id": N, "count": K}`` with the K float32 vectors (little-endian,
  row-major) as the frame's body, or ``{"op": "error", "id": N, "message": ...}``.

End of input (the parent closed the pipe, finished or died) ends the child; requests still
queued are dropped. Ctrl-C is the parent's to handle: the child runs in a process group of its
own, which a terminal's Ctrl-C does not reach, and ignores SIGINT once it runs. The vectors are
those of the same ``OnnxEncoder`` in the parent, bit for bit: same graph file, same options, and
int8 runs one text at a time.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import signal
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, BinaryIO

from retrieval.offline import keep_onnxruntime_local

# onnxruntime reads its telemetry switch when it loads (the child imports it): set it first.
keep_onnxruntime_local()

_HEADER = struct.Struct(">II")  # lengths of the JSON part and of the body
MAX_FRAME = 64 * 1024 * 1024  # a frame longer than this is a broken stream, not a request
VECTOR_DTYPE = "<f4"
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])  # the folder holding ``retrieval``
CLOSE_SECONDS = 5.0  # after its input is closed, how long a child may take to exit before it is killed


def spawn() -> subprocess.Popen[bytes]:
    """Start a child running this module; it imports its libraries, then waits for ``load``.

    Raises ``OSError`` when no process can be started. Only this module and the standard
    library are imported here, so that a caller can start it before its own slow imports.
    """
    if not sys.executable:  # an embedding application's interpreter: no program to start
        raise OSError("no Python executable to start the encoding process with")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_ROOT, env.get("PYTHONPATH")]))
    return subprocess.Popen(
        [sys.executable, "-m", __spec__.name if __spec__ else "retrieval.index.encoders.worker_process"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, close_fds=True,
        process_group=0,  # outside the terminal's foreground group: Ctrl-C is the parent's alone
    )


def end(process: subprocess.Popen[bytes]) -> None:
    """Close the child's input (it exits, dropping whatever is queued); kill it if it lingers."""
    try:
        if process.stdin is not None:
            process.stdin.close()
    except OSError:
        pass
    try:
        process.wait(CLOSE_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


_started: subprocess.Popen[bytes] | None = None
_started_lock = threading.Lock()


def start_encoding_process() -> None:
    """Start the child that will encode this process's next ingest, now, before it is needed.

    ``paperbot ingest`` calls this first thing, so that the child's start-up (interpreter,
    numpy, onnxruntime: about half a second here) overlaps the command's own imports; the next
    ``IndexWriter.encoding_ahead`` takes it (``take_started_process``), or closes it when nothing
    needs encoding. One is enough: a second call does nothing. A child that cannot be started is
    not an error (the ingest encodes in its own process), and one never taken ends with this
    process.
    """
    global _started
    with _started_lock:
        if _started is not None:
            return
        try:
            _started = spawn()
        except OSError:
            return
    atexit.register(_end_untaken)


def take_started_process() -> subprocess.Popen[bytes] | None:
    """The child ``start_encoding_process`` started, if any; it is then the caller's to end."""
    global _started
    with _started_lock:
        started, _started = _started, None
    return started


def _end_untaken() -> None:
    started = take_started_process()
    if started is not None:
        end(started)


class FrameError(RuntimeError):
    """The other end broke the protocol (a truncated or oversized frame, not JSON)."""


def write_frame(stream: BinaryIO, message: dict[str, Any], body: bytes = b"") -> None:
    """One frame: two big-endian lengths, the message as JSON, then the body (may be empty)."""
    # ASCII escapes: a lone surrogate in a text survives the trip (UTF-8 could not carry it)
    encoded = json.dumps(message).encode("ascii")
    stream.write(_HEADER.pack(len(encoded), len(body)) + encoded + body)
    stream.flush()


def read_frame(stream: BinaryIO) -> tuple[dict[str, Any], bytes] | None:
    """The next frame, or None at a clean end of the stream (before a frame began)."""
    header = _read_exactly(stream, _HEADER.size, allow_end=True)
    if header is None:
        return None
    size, body_size = _HEADER.unpack(header)
    if size > MAX_FRAME or body_size > MAX_FRAME:
        raise FrameError(f"frame of {size:,} + {body_size:,} bytes is over the {MAX_FRAME:,}-byte limit")
    raw = _read_exactly(stream, size)
    body = _read_exactly(stream, body_size) if body_size else b""
    assert raw is not None and body is not None
    try:
        message = json.loads(raw.decode("ascii"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FrameError(f"frame is not JSON: {exc}") from exc
    if not isinstance(message, dict) or not isinstance(message.get("op"), str):
        raise FrameError("frame has no 'op'")
    return message, body


def _read_exactly(stream: BinaryIO, size: int, *, allow_end: bool = False) -> bytes | None:
    chunks: list[bytes] = []
    missing = size
    while missing:
        chunk = stream.read(missing)
        if not chunk:
            if allow_end and missing == size:
                return None
            raise FrameError(f"stream ended inside a frame ({size - missing} of {size} bytes)")
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def _serve(requests: BinaryIO, replies: BinaryIO) -> int:
    import numpy as np

    from retrieval.index.encoders.onnx_runtime import OnnxEncoder

    first = read_frame(requests)
    if first is None:
        return 0  # started in advance and not needed
    load, _ = first
    if load["op"] != "load":
        raise FrameError(f"expected 'load', got {load['op']!r}")
    try:
        encoder = OnnxEncoder(Path(load["model_file"]), name=str(load["name"]), **load["options"])
        encoder.encode(["warm up"] * 2)  # both sessions made now, not inside the first request
    except Exception as exc:  # noqa: BLE001 - told to the parent, which encodes in its own process
        write_frame(replies, {"op": "error", "message": f"{type(exc).__name__}: {exc}"})
        return 1
    write_frame(replies, {"op": "ready", "name": encoder.name})

    # The main thread keeps reading, so the parent never blocks on a full pipe; one thread encodes,
    # another writes: a parent slow to read (its reader thread waits for its GIL) never stalls encoding.
    pending: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
    finished: queue.SimpleQueue[tuple[dict[str, Any], bytes] | None] = queue.SimpleQueue()

    def encode_in_order() -> None:
        while (request := pending.get()) is not None:
            try:
                vectors = np.ascontiguousarray(encoder.encode(request["texts"]), dtype=VECTOR_DTYPE)
            except Exception as exc:  # noqa: BLE001 - this request fails, the parent encodes it itself
                finished.put(({"op": "error", "id": request["id"], "message": f"{type(exc).__name__}: {exc}"}, b""))
                continue
            finished.put(({"op": "vectors", "id": request["id"], "count": len(vectors)}, vectors.tobytes()))

    def write_in_order() -> None:
        try:
            while (reply := finished.get()) is not None:
                write_frame(replies, *reply)
        except OSError:  # the parent is gone: its end of the pipe closed too, which ends the main loop
            return

    threading.Thread(target=write_in_order, name="write", daemon=True).start()
    encoding = threading.Thread(target=encode_in_order, name="encode", daemon=True)
    encoding.start()
    while (frame := read_frame(requests)) is not None:
        message, _ = frame
        if message["op"] != "encode":
            raise FrameError(f"expected 'encode', got {message['op']!r}")
        pending.put(message)
    return 0  # the parent is done: whatever is still queued is not wanted


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle (module docstring)
    import numpy  # noqa: F401 - the slow imports first, while the parent is busy with its own
    import onnxruntime  # noqa: F401
    import tokenizers  # noqa: F401

    try:
        return _serve(sys.stdin.buffer, sys.stdout.buffer)
    except (BrokenPipeError, FrameError):
        return 1  # the parent is gone or broke the stream; it falls back on its own encoder


if __name__ == "__main__":
    os._exit(main())  # no waiting for the encoding thread's queued work or the interpreter's teardown
