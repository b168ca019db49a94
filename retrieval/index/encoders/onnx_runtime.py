"""An exported all-MiniLM-L6-v2 run by onnxruntime: tokenising, batching, sessions.

The model files come from ``onnx_export`` (kept in the machine's encoder cache, ``cache``);
``loading.onnx_encoder`` puts the two together.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from retrieval.index.encoders.base import DIMENSION, MAX_TOKENS, cpu_count, model_path
from retrieval.offline import keep_onnxruntime_local

# onnxruntime reads its telemetry switch when it loads: set it before anything imports it.
keep_onnxruntime_local()


class ModelFileError(RuntimeError):
    """onnxruntime could not load a model file (truncated, overwritten, not a model)."""


class Tokens:
    """The model's fast tokenizer, cut at MAX_TOKENS, returning numpy id/mask arrays."""

    def __init__(self, tokenizer_file: Path) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.no_padding()

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        # sentence-transformers strips surrounding whitespace before tokenizing
        return [enc.ids for enc in self._tokenizer.encode_batch([str(t).strip() for t in texts])]

    def pad(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        return pad_rows(self.ids(texts))


def model_tokens() -> Tokens:
    """The bundled model's tokenizer."""
    return Tokens(Path(model_path()) / "tokenizer.json")


def pad_rows(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids and attention mask, right-padded to the longest row."""
    width = max(len(row) for row in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for r, row in enumerate(rows):
        ids[r, : len(row)] = row
        mask[r, : len(row)] = 1
    return ids, mask


def model_inputs(ids: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
    """The feed of one run (BERT's three inputs; one segment)."""
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def make_session(model_file: Path, threads: int | None = None, spin: bool = False, *,
                 optimized: bool = False, save_optimized: Path | None = None) -> Any:
    """An onnxruntime CPU session over ``model_file``; ``ModelFileError`` when it cannot load it.

    onnxruntime optimises the graph (``ORT_ENABLE_ALL``: fusions, constant folding) each time a
    session is made; ``save_optimized`` writes the result to that path, and ``optimized=True``
    loads such a file without optimising again (same vectors, bit for bit; about 40 ms less CPU
    per session here, docs/encoders.md).
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_DISABLE_ALL if optimized
                                        else ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    if save_optimized is not None:
        options.optimized_model_filepath = str(save_optimized)
    options.intra_op_num_threads = threads or cpu_count()
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    if not spin:
        # Idle worker threads sleep instead of busy-waiting: on a machine shared with Chroma,
        # the Slack workers and other jobs, spinning steals the cores the other thread needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
    except (OSError, MemoryError):
        raise
    except Exception as exc:  # onnxruntime's own types (InvalidProtobuf, NoSuchFile, Fail...) derive from Exception
        raise ModelFileError(f"{model_file}: {type(exc).__name__}: {exc}") from exc


class RunQueue:
    """The runs of one window, longest first, handed to whichever session is free next.

    Pulling instead of dealing every n-th run to each session keeps both sessions busy to the
    end of a call whose texts differ in length (dealt in turn, the session given the longer text
    of each pair finishes last). On the 40 real publication lists, encoded 64 texts per call as
    an ingest does, the two gave the same speed within the noise (docs/encoders.md).
    """

    def __init__(self, batches: Sequence[np.ndarray]) -> None:
        self._batches = iter(batches)
        self._lock = threading.Lock()

    def next(self) -> np.ndarray | None:
        with self._lock:
            return next(self._batches, None)


class OnnxEncoder:
    """An exported all-MiniLM-L6-v2 run by onnxruntime on the CPU.

    Texts are tokenized in windows of ``window``, sorted by length and cut into batches: at most
    ``batch_size`` texts, and (with ``token_budget``) at most that many padded tokens per batch,
    so short texts share a run while long ones go alone. The output keeps the input order.
    ``workers`` sessions (each with ``threads / workers`` intra-op threads) take the batches,
    longest first, from parallel threads as each becomes free (``RunQueue``); onnxruntime
    releases the GIL while it runs. Only the first session is made up front: the others are made
    by the first call with more than one run, so a command that encodes one query pays for one
    session.

    The int8 model quantises activations with one scale per *run*, so an int8 vector depends on
    the texts it shares a run with (cosine down to 0.98 between a title encoded alone and in a
    batch of 16): int8 is run one text at a time (``batch_size=1``), which keeps every vector a
    function of its own text. The defaults come from measurements on the machine at hand
    (``docs/encoders.md``). ``optimized``: ``model_file`` is a graph onnxruntime already optimised
    (``onnx_export.ensure_optimized_graph``).
    """

    dimension = DIMENSION

    def __init__(
        self,
        model_file: Path,
        *,
        name: str,
        batch_size: int = 1,
        token_budget: int | None = None,
        threads: int | None = None,
        workers: int = 1,
        spin: bool = False,
        sort_by_length: bool = True,
        window: int = 1024,
        optimized: bool = False,
    ) -> None:
        self.name = name
        self.model_file = Path(model_file)
        # how to make this very encoder again (in another process: ``encode_ahead``)
        self.options: dict[str, Any] = {
            "batch_size": batch_size, "token_budget": token_budget, "threads": threads, "workers": workers,
            "spin": spin, "sort_by_length": sort_by_length, "window": window, "optimized": optimized,
        }
        self._workers = max(1, min(workers, cpu_count()))
        per_worker = max(1, (threads or cpu_count()) // self._workers)
        self._new_session = partial(make_session, self.model_file, per_worker, spin, optimized=optimized)
        self._sessions = [self._new_session()]
        self._sessions_lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._tokens = model_tokens()
        self._batch_size = max(1, batch_size)
        self._token_budget = token_budget
        self._sort = sort_by_length
        self._window = window

    def _batches(self, lengths: np.ndarray) -> list[np.ndarray]:
        """Row numbers per run: longest first, within ``batch_size`` and ``token_budget``."""
        order = np.argsort(-lengths, kind="stable") if self._sort else np.arange(len(lengths))
        batches: list[np.ndarray] = []
        first = 0
        while first < len(order):
            size = self._batch_size
            if self._token_budget:  # the first (longest) text sets the padded width
                size = min(size, max(1, self._token_budget // max(1, int(lengths[order[first]]))))
            batches.append(order[first : first + size])
            first += size
        return batches

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(texts), self._window):
            rows = self._tokens.ids(texts[start : start + self._window])
            lengths = np.fromiter((len(row) for row in rows), dtype=np.int64, count=len(rows))
            batches = self._batches(lengths)
            window = out[start : start + len(rows)]  # a view: the runs write into ``out``
            sessions = self._sessions_for(len(batches))
            queue = RunQueue(batches)
            if len(sessions) == 1:
                self._run(sessions[0], queue, rows, window)
            else:
                assert self._pool is not None
                running = [self._pool.submit(self._run, session, queue, rows, window) for session in sessions]
                for done in running:
                    done.result()
        return out

    def _sessions_for(self, runs: int) -> list[Any]:
        """The sessions ``runs`` runs are shared among: one per worker, at most one per run."""
        wanted = min(self._workers, max(1, runs))
        if len(self._sessions) < wanted:
            with self._sessions_lock:  # encode may be called from several threads (Slack workers)
                if self._pool is None:  # before the sessions: whoever sees them sees the pool
                    self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="onnx")
                while len(self._sessions) < wanted:
                    self._sessions.append(self._new_session())
        return self._sessions[:wanted]

    @staticmethod
    def _run(session: Any, queue: RunQueue, rows: list[list[int]], out: np.ndarray) -> None:
        """Runs taken from ``queue`` until it is empty, each run's vectors into its rows of ``out``."""
        while (chosen := queue.next()) is not None:
            ids, mask = pad_rows([rows[i] for i in chosen])
            out[chosen] = session.run(None, model_inputs(ids, mask))[0]
