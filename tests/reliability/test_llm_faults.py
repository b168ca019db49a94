"""The chat model endpoint down, too slow or answering garbage: `paperbot ask` still answers.

Each case runs the CLI's ``main`` (in this process, to keep the suite fast; the last test runs
the console script itself) against the answers engineer's scripted
OpenAI-compatible server (``tests/answers/openai_stub_server.py``) with a fake API key set.
Expected every time: exit status 0, an extractive answer citing indexed records, exactly one
notice line on stderr that says why (a server that never starts answering is "too slow", not
"unreachable": it took the request), and the key nowhere in the output or in any log record,
debug level included.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.answers.openai_stub_server import OpenAIStubServer, StubReply
from tests.reliability.helpers import FAKE_SECRETS, log_texts, paperbot, run_main, secrets_found

pytestmark = pytest.mark.slow

QUESTION = "Which papers use a pebble game to certify sparse graph decompositions?"
EXPECTED_ID = "arxiv:0704.0002"  # "Sparsity-certifying Graph Decompositions"

NOTICES = {
    "down": "LLM unreachable (cannot connect, 2 attempts)",
    "slow": "The model was too slow (it did not start answering within 1 s",
    "garbage": "LLM unreachable (malformed response)",
    "server-error": "LLM unreachable (HTTP 500 after 2 attempts)",
}
FAULTS = {
    "slow": StubReply(text="Too late [1].", delay=5.0),
    "garbage": StubReply(status=200, raw_body=b"<html>502 Bad Gateway</html>\x00{\"choices\": ["),
    "server-error": StubReply(status=500, headers={"retry-after-ms": "5"}),
}


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens there any more


@pytest.fixture
def endpoint(request: pytest.FixtureRequest) -> Iterator[tuple[str, OpenAIStubServer | None]]:
    if request.param == "down":
        yield _closed_port_url(), None
        return
    with OpenAIStubServer(default=FAULTS[request.param]) as server:
        yield server.base_url, server


@pytest.mark.parametrize("endpoint", ["down", "slow", "garbage", "server-error"], indirect=True)
def test_ask_falls_back_to_an_extractive_answer(
    base_index: Path, endpoint: tuple[str, OpenAIStubServer | None], caplog: pytest.LogCaptureFixture,
    request: pytest.FixtureRequest,
) -> None:
    url, server = endpoint
    fault = request.node.callspec.params["endpoint"]
    caplog.set_level(logging.DEBUG)
    run = run_main(
        "ask", QUESTION, "--json", data_dir=base_index,
        OPENAI_BASE_URL=url, PAPERBOT_LLM_TIMEOUT="1", PAPERBOT_LLM_MAX_RETRIES="1", **FAKE_SECRETS,
    )

    assert run.code == 0, run.stderr
    assert "Traceback" not in run.stderr
    result = run.json()
    assert result["mode"] == "extractive"
    assert EXPECTED_ID in [citation["id"] for citation in result["citations"]]
    notices = [line for line in run.stderr.splitlines() if "extractive answer instead" in line]
    assert len(notices) == 1 and NOTICES[fault] in notices[0], run.stderr
    assert notices[0].strip().endswith("extractive answer instead."), run.stderr
    if server is not None:
        assert server.chat_requests, "the model was never asked: the fault was not exercised"
        assert all(r.headers.get("authorization") == f"Bearer {FAKE_SECRETS['OPENAI_API_KEY']}"
                   for r in server.chat_requests)
    logged = "\n".join(f"{r.name}: {r.getMessage()} {r.args!r}" for r in caplog.records)
    leaks = secrets_found({"stdout": run.stdout, "stderr": run.stderr, "log records": logged, **log_texts(base_index)})
    assert leaks == []


def test_console_script_with_the_endpoint_down_answers_and_keeps_the_key_to_itself(base_index: Path) -> None:
    """The real ``paperbot`` process: its own logging set-up prints warnings to stderr."""
    run = paperbot(
        "ask", QUESTION, data_dir=base_index, timeout=180,
        OPENAI_BASE_URL=_closed_port_url(), PAPERBOT_LLM_TIMEOUT="1", PAPERBOT_LLM_MAX_RETRIES="1",
        **FAKE_SECRETS,  # type: ignore[arg-type]  # mypy matches **dict[str, str] to timeout= too, not only to **env
    )
    assert run.code == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert "Sparsity-certifying Graph Decompositions" in run.stdout
    assert "LLM unreachable" in run.stderr
    assert secrets_found({"stdout": run.stdout, "stderr": run.stderr, **log_texts(base_index)}) == []
