"""Session fixtures every test folder may use (the expensive ones are made once, on first use)."""

from __future__ import annotations

import os
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from retrieval.index.encoders.choice import AutoChoice, cpu_model_and_flags
from tests.support.model_cache import AUTO_CHOOSES, shared_model_cache, use_session_encoder_cache
from tests.support.patience import TIME_SCALE, time_scale
from tests.support.postgres import PostgresServer

EMULATED_CPU = "PAPERBOT_TESTS_EMULATED_CPU"  # set by bench/simd_hosts.sh
HARNESS = "PAPERBOT_TESTS_"  # the test harness's own variables (waits, emulation, pinned choice): never paperbot's

# The database backends a store's tests run against: SQLite in the data dir, and a real PostgreSQL.
BACKENDS = [pytest.param("sqlite", id="sqlite"), pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres)]


def pytest_configure(config: pytest.Config) -> None:
    """Before anything is collected: the session's own encoder cache, never the user's; with
    ``PAPERBOT_TESTS_AUTO_CHOOSES``, also the export and the pinned ``auto`` choice, before any test
    (or any ``paperbot`` it starts) can load ``auto`` (``tests/support/model_cache.py``)."""
    try:
        time_scale()
    except ValueError as exc:  # a mistyped factor stops the session at once, not each test that waits
        raise pytest.UsageError(str(exc)) from None
    use_session_encoder_cache()
    if os.environ.get(AUTO_CHOOSES):
        shared_model_cache()


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Which host runs the suite: the int8 encoder's kernels and ``auto``'s choice depend on its
    SIMD (docs/evidence.md, "Host numerics"), so a log says which kind of host passed or failed."""
    model, flags = cpu_model_and_flags()
    simd = ("AVX-512 with VNNI" if "avx512_vnni" in flags else "AVX-512 without VNNI" if "avx512f" in flags
            else "AVX2, no AVX-512" if "avx2" in flags else "no AVX2")
    pinned = os.environ.get(AUTO_CHOOSES)
    if emulated := os.environ.get(EMULATED_CPU):  # bench/simd_hosts.sh: /proc/cpuinfo is the real host's
        simd = f"emulated by {emulated} (the flags read are the real host's: {simd})"
    return [f"paperbot host: {model}; {os.cpu_count()} cores; {simd} ({' '.join(flags) or 'no SIMD flags read'})",
            f"paperbot encoder: auto {'pinned to ' + pinned + ' by ' + AUTO_CHOOSES if pinned else 'probed on first use'}"
            "; its choice is reported at the end",
            *([f"paperbot waits: {time_scale():g} times as long ({TIME_SCALE})"] if time_scale() != 1 else [])]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """What ``auto`` chose in this session (read from the session's encoder cache), if anything loaded it."""
    for path in sorted(use_session_encoder_cache().glob("auto-choice-*.json")):
        try:
            choice = AutoChoice.from_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            terminalreporter.write_line(f"paperbot encoder: the session's auto choice {path.name} is unreadable ({exc})")
            continue
        terminalreporter.write_line(f"paperbot encoder: auto chose {choice.variant} on this host "
                                    f"({', '.join(choice.signature.get('flags', [])) or 'no SIMD flags'})")


@pytest.fixture(scope="session")
def model_cache() -> Path:
    """The session's encoder cache dir (ONNX exports, the auto choice), exported into once and used by
    every data dir and subprocess (``tests/support/model_cache.py``)."""
    return shared_model_cache()


@pytest.fixture(scope="session")
def fp32_onnx_encoder(model_cache: Path, tmp_path_factory: pytest.TempPathFactory):
    """The same model's float32 ONNX export from the session's encoder cache: the reference
    encoder's vectors (cosine agreement 1.00000 with torch, docs/performance.md "Encoders") at
    several times its speed on these hosts, and no int8 numerics that differ between AVX2 and
    AVX-512; for fixtures that embed thousands of records."""
    from retrieval.config import Settings
    from retrieval.index.encoders.loading import load_encoder

    return load_encoder(Settings(_env_file=None, data_dir=tmp_path_factory.mktemp("fp32"), encoder="onnx", chroma_url=None,
                                 encoder_cache_dir=model_cache))


@pytest.fixture(scope="session")
def reference_encoder():
    """The reference torch encoder (sentence-transformers), loaded once per session and shared by
    every in-process test that needs real vectors (it keeps no state between calls)."""
    from retrieval.index.encoders.torch_encoder import TorchEncoder

    return TorchEncoder()


@pytest.fixture
def slack_retry_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits slack_sdk's retry handlers ask for, recorded instead of slept.

    On a 429 the SDK sleeps Retry-After plus up to 1 s of jitter, on a 5xx a backoff (0.5 s,
    1 s, ...), with ``time.sleep`` called from its ``http_retry`` modules: real seconds that a
    test of the retries spends idle. Only those modules' ``time`` is replaced; the retried calls
    themselves still go to the stand-in.
    """
    from slack_sdk.http_retry import builtin_handlers, handler  # here: slack_sdk costs ~85 ms to import

    waits: list[float] = []
    clock = types.SimpleNamespace(sleep=waits.append)
    monkeypatch.setattr(handler, "time", clock)
    monkeypatch.setattr(builtin_handlers, "time", clock)
    return waits


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server on 127.0.0.1, started for this test process and stopped after it."""
    server = PostgresServer.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_databases(request: pytest.FixtureRequest) -> Iterator[Callable[[], str]]:
    """A maker of further new, empty PostgreSQL databases for a test that needs several (each
    dropped after the test); the server is started on first use only."""
    made: list[tuple[PostgresServer, str]] = []

    def new() -> str:
        server: PostgresServer = request.getfixturevalue("postgres_server")
        made.append((server, server.new_database()))
        return made[-1][1]

    yield new
    for server, url in made:
        server.drop_database(url)


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """``PAPERBOT_DATABASE_URL`` for each backend: None (SQLite in the data dir), then a new, empty
    PostgreSQL database of the test's own. The process's engines are disposed of afterwards."""
    from retrieval.storage.database import close_databases

    if request.param == "sqlite":
        yield None
        close_databases()
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = server.new_database()
    try:
        yield url
    finally:
        close_databases()
        server.drop_database(url)
