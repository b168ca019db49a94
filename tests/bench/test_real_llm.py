"""``bench/real_llm.py`` against the scripted OpenAI-compatible server, run as a user runs it.

The stub writes each reply from the records in the prompt it was sent (which records retrieval
puts first is not this test's business): a good cited sentence (with one invented ``[42]``
beside it), a bare "[1]", and a good sentence followed by one copied from another record's title but cited
as [1]. The report must call them llm / supported, an "unusable" fallback (not "unreachable"),
and llm with the second sentence either dropped by validation ("wrong citation") or flagged
miscited by the bench, never counted as supported. An
unreachable base URL must fail fast with a message. Only the bundled sample is indexed
(``--no-scholars``), so no shared dataset is needed. The model's checks before the answer are
off (``--no-checks``): the stub writes answers; the checks have their own tests
(``tests/answers/test_model_checks.py``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.real_llm import MIN_SUPPORT, Record, check_support, cited_sentences, prompt_records
from retrieval.text import content_terms
from tests.answers.openai_stub_server import OpenAIStubServer, StubReply
from tests.support.patience import patience

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = ("unit-tests", "flaky", "metamorphic")  # sample topics: each retrieves evidence, one model call


def good(records: dict) -> str:
    return f"One record studies {records[1].title} [1]. It also settles every open question [42]."


def bare(records: dict) -> str:
    return "[1]"


def miscited(records: dict) -> str:
    """A good sentence, then one naming another record's title but citing [1]."""
    first = content_terms(records[1].text)
    other = min((n for n in records if n != 1), key=lambda n: len(content_terms(records[n].title) & first))
    return f"One record studies {records[1].title} [1]. One record studies {records[other].title} [1]."


class PromptAwareStub(OpenAIStubServer):
    """Each chat request gets the next writer's reply, made from the records of that request."""

    def __init__(self, writers: list[Callable[[dict], str]]) -> None:
        super().__init__()
        self.writers = list(writers)

    def _next_reply(self) -> StubReply:
        request = self.requests[-1]
        messages = request.body.get("messages", []) if isinstance(request.body, dict) else []
        _, records = prompt_records(str(messages[-1].get("content", "")) if messages else "")
        with self._lock:
            writer = self.writers.pop(0) if self.writers else bare
        return StubReply(text=writer(records))


def bench(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "PAPERBOT_"))}
    env.update({"HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"})
    return subprocess.run([sys.executable, "bench/real_llm.py", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=patience(timeout))


def test_an_unreachable_base_url_fails_fast_with_what_to_do(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = bench("--base-url", f"http://127.0.0.1:{port}/v1", "--out", str(tmp_path), timeout=120)
    assert done.returncode != 0
    assert "cannot reach the model server" in done.stderr and "--base-url" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "real-llm-index").exists()  # nothing was built


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, PromptAwareStub]:
    out = tmp_path_factory.mktemp("bench-out")
    with PromptAwareStub([good, bare, miscited]) as server:
        done = bench("--base-url", server.base_url, "--no-scholars", "--only", ",".join(QUESTIONS),
                     "--out", str(out), "--json", str(out / "real-llm.json"), "--max-retries", "0", "--no-checks")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "real-llm.json").read_text(encoding="utf-8")), done.stdout, server


@pytest.mark.slow
def test_a_good_cited_reply_is_llm_and_supported(report: tuple[dict, str, PromptAwareStub]) -> None:
    payload, _, server = report
    row = {q["id"]: q for q in payload["questions"]}["unit-tests"]
    assert payload["model"] == server.model  # taken from the server's /models
    assert row["mode"] == "llm" and row["fallback"] is None and row["model_calls"] == 1
    assert row["raw_citations"] == 2 and row["kept_citations"] == 1 and row["invalid_citations"] == [42]
    assert row["dropped"] == {"invalid citation only": 1}
    assert [c["verdict"] for c in row["checks"]] == ["supported"]
    assert row["checks"][0]["cited"] == [1] and row["checks"][0]["best"] == 1
    assert row["raw_chars"] == len(row["raw_reply"]) > 0 and row["evidence"] >= 2


@pytest.mark.slow
def test_a_bare_citation_is_an_unusable_reply_not_an_unreachable_server(
        report: tuple[dict, str, PromptAwareStub]) -> None:
    payload, output, _ = report
    row = {q["id"]: q for q in payload["questions"]}["flaky"]
    assert row["mode"] == "fallback" and row["fallback"] == "unusable"
    assert "no words" in row["fallback_reason"] and "unreachable" not in (row["notice"] or "")
    assert row["raw_reply"] == "[1]" and row["raw_citations"] == 1 and row["kept_citations"] == 0
    assert row["checks"] == []
    assert "fallback: unusable" in output


@pytest.mark.slow
def test_a_miscited_sentence_is_never_counted_as_supported(report: tuple[dict, str, PromptAwareStub]) -> None:
    payload, output, _ = report
    row = {q["id"]: q for q in payload["questions"]}["metamorphic"]
    assert row["invalid_citations"] == [] and row["raw_citations"] == 2
    miscited_text = row["raw_reply"].split("[1]. ", 1)[1]
    dropped = [d for d in row["dropped_sentences"] if d["text"] == miscited_text.strip()]
    flagged = [c for c in row["checks"] if c["sentence"] == miscited_text.strip()]
    # validation drops it ("wrong citation"), or keeps it and the bench flags it: never both, never "supported"
    assert len(dropped) + len(flagged) == 1, (row["dropped_sentences"], row["checks"])
    if dropped:
        assert dropped[0]["reason"] == "wrong citation"
    else:
        assert flagged[0]["verdict"] == "miscited" and flagged[0]["best"] != 1
        assert "not supported by their cited record" in output
    good = [c for c in row["checks"] if c["sentence"] != miscited_text.strip()]
    assert row["mode"] == "llm" and [c["verdict"] for c in good] == ["supported"]


@pytest.mark.slow
def test_the_totals_add_up(report: tuple[dict, str, PromptAwareStub]) -> None:
    payload, output, server = report
    summary = payload["summary"]
    rows = payload["questions"]
    assert len(server.chat_requests) == 3
    assert summary["modes"] == {"llm": 2, "fallback": 1}
    assert summary["kinds"]["topic"]["questions"] == 3
    assert summary["kept_cited_sentences"] == sum(len(r["checks"]) for r in rows)
    assert summary["supported"] == 2  # the good sentence of each llm answer
    assert summary["citation_validity"] == round(2 / summary["kept_cited_sentences"], 3)
    assert summary["invalid_citations"] == 1 and summary["dropped"]["invalid citation only"] == 1
    assert summary["raw_citations"] == 2 + 1 + 2
    assert list(summary["fallbacks"]) == ["unusable: it held no words, only citation marks or markers"]
    assert "| kind | questions | modes | median s | citation validity |" in output


# the measure itself, without a server or an index ---------------------------------------------

RECORDS = {
    1: Record(1, "a", "Metamorphic testing of deep learning forecasters", "(no abstract)"),
    2: Record(2, "b", "Mutation testing for Ethereum smart contracts", "We mutate Solidity programs."),
}


def test_a_sentence_about_its_cited_record_is_supported() -> None:
    check = check_support("Deep learning forecasters were checked by metamorphic testing [1].", [1], RECORDS)
    assert check.verdict == "supported" and check.best == 1 and check.cited_overlap >= 0.8  # "checked" is not in it


def test_a_sentence_about_another_record_is_miscited() -> None:
    check = check_support("Solidity smart contracts were mutated [1].", [1], RECORDS)
    assert check.verdict == "miscited" and check.best == 2 and check.cited_overlap == 0.0


def test_a_sentence_the_records_do_not_carry_is_weak() -> None:
    check = check_support("This line of work is very important for society [1].", [1], RECORDS)
    assert check.verdict == "weak" and check.cited_overlap < MIN_SUPPORT


def test_the_records_are_read_back_from_the_prompt() -> None:
    from retrieval.answers.evidence import build_evidence
    from retrieval.records.paper import Paper
    from retrieval.results import SearchHit

    papers = [Paper(title="First title", abstract="First abstract."), Paper(title="Second title")]
    evidence = build_evidence([SearchHit(paper=p, score=1.0) for p in papers])
    prompt = f"Data marker of this message: {evidence.boundary}\n\n{evidence.render()}"
    boundary, records = prompt_records(prompt)
    assert boundary == evidence.boundary
    assert [(r.n, r.title, r.text) for r in records.values()] == [
        (1, "First title", "First title First abstract."), (2, "Second title", "Second title")]
    assert cited_sentences("Intro:\n- A claim [1]. Another [2][1].", (2, 1)) == [
        ("A claim [1].", [2]), ("Another [2][1].", [1, 2])]
