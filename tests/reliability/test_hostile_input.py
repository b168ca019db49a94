"""Hostile and malformed input at the command line: size limits, odd characters, prompt injection.

* Size limits: an overlong question is capped with a notice; an empty one (or one made only of
  control characters) is refused in one line; a file over 200 MB, a gzip bomb expanding past
  it, a field over 100,000 characters and an absurd author list are refused by name while the
  rest of the file is kept.
* Unicode and control characters in questions (terminal escapes, bidi overrides, zero-width
  characters, fullwidth and combining forms, undecodable argv bytes) find the right paper and
  never reach the terminal.
* The prompt-injection corpus of ``tests/fixtures/injection/`` (answers engineer) end to end
  through the CLI over a real index: extractive answers to benign questions are the same with
  the hostile records indexed; hostile questions leak nothing; an LLM that obeys the injection
  (a stub replying with the system prompt, pings and invented citations) has all of it removed.

Most runs use the CLI's ``main`` in this process (fast); one runs the console script with raw
undecodable bytes in its argv.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.answers.openai_stub_server import OpenAIStubServer, StubReply
from tests.reliability.helpers import PAPERBOT, ROOT, bib_entries, clean_env, link_model_cache, run_main
from tests.support.patience import patience

pytestmark = pytest.mark.slow

ANSWERS = ROOT / "tests" / "fixtures" / "answers" / "papers.jsonl"
INJECTION = ROOT / "tests" / "fixtures" / "injection"
SYSTEM_PROMPT = (ROOT / "prompts" / "answer_system.txt").read_text(encoding="utf-8")
MB = 1024 * 1024

# --- size limits -----------------------------------------------------------------------------


def test_an_overlong_question_is_capped_with_a_notice(base_index: Path) -> None:
    run = run_main("ask", "pebble games on sparse graphs " * 200, "--json", data_dir=base_index)
    assert run.code == 0, run.stderr
    assert "Query capped at 2,000 characters (it had 5,999)" in " ".join(run.stderr.split())
    assert "arxiv:0704.0002" in [c["id"] for c in run.json()["citations"]]


@pytest.mark.parametrize("question", ["", "   \t\n ", "\x00\x1b\u200b\u202e\x7f"], ids=["empty", "blank", "controls"])
def test_an_empty_question_is_refused_in_one_line(base_index: Path, question: str) -> None:
    run = run_main("ask", question, data_dir=base_index)
    assert run.code == 2 and run.stdout == ""
    assert run.stderr.strip().splitlines() == [run.stderr.strip()]
    assert run.stderr.startswith("paperbot: The question is empty.")


def _gzip_bomb(path: Path, size: int) -> None:
    chunk = b"%" * MB  # BibTeX comment characters: nothing but size
    with gzip.open(path, "wb", compresslevel=1) as handle:
        for _ in range(size // MB):
            handle.write(chunk)


def test_oversized_files_are_refused_by_name(fresh_dir: Path, tmp_path: Path) -> None:
    sparse = tmp_path / "huge.bib"
    with sparse.open("wb") as handle:
        handle.truncate(201 * MB)  # a sparse file: 201 MB to stat, nothing on disk
    bomb = tmp_path / "bomb.bib.gz"
    _gzip_bomb(bomb, 201 * MB)
    assert bomb.stat().st_size < 2 * MB
    good = tmp_path / "good.bib"
    good.write_text(bib_entries(3, start=1), encoding="utf-8")

    run = run_main("ingest", str(sparse), str(bomb), str(good), "--json", data_dir=fresh_dir)

    assert run.code == 0, run.stderr
    report = run.json()
    assert report["added"] == 3
    reasons = {item["item"]: item["reason"] for item in report["skipped"]}
    for path in (sparse, bomb):
        assert "larger than the 200 MB limit" in reasons[str(path)], reasons
        assert "split it into smaller files" in reasons[str(path)]


def test_absurd_fields_skip_their_entry_and_keep_the_rest(fresh_dir: Path, tmp_path: Path) -> None:
    authors = " and ".join(f"Author{i}, A." for i in range(12_000))
    hostile = (
        "@article{longabstract, title = {A title}, author = {Doe, Jane}, year = {2020},\n"
        f"  abstract = {{{'word ' * 30_000}}}}}\n\n"
        f"@article{{manyauthors, title = {{Another title}}, author = {{{authors}}}, year = {{2021}}}}\n\n"
    )
    path = tmp_path / "hostile.bib"
    path.write_text(hostile + bib_entries(2, start=1), encoding="utf-8")

    run = run_main("ingest", str(path), "--json", data_dir=fresh_dir)

    assert run.code == 0, run.stderr
    report = run.json()
    assert report["added"] == 2
    reasons = " | ".join(f"{item['item']}: {item['reason']}" for item in report["skipped"])
    assert "longabstract" in reasons and "'abstract' exceeds 100000 characters" in reasons, reasons
    assert "manyauthors" in reasons and "'author' exceeds 100000 characters" in reasons, reasons


# --- unicode and control characters ------------------------------------------------------------

ODD_QUESTIONS = {
    "terminal-escapes": "pebble game \x1b[2J\x1b]0;owned\x07 sparse \x1b[31mgraphs\x1b[0m",
    "bidi": "\u202egraphs sparse\u202c pebble \u2066game\u2069",
    "zero-width": "pe\u200bbble ga\u200dme spa\ufeffrse graphs",
    "fullwidth": "\uff50\uff45\uff42\uff42\uff4c\uff45 \uff47\uff41\uff4d\uff45 sparse graphs",
    "combining": "pe\u0337bble\u0336 ga\u0338me sparse graphs",
    "emoji-cjk": "\U0001f9ee pebble game \u7a00\u758f\u56fe sparse graphs",
    "undecodable-argv": "pebble game \udcff\udcfe sparse graphs",  # what Python makes of bytes 0xff 0xfe in argv
}
NEVER_PRINTED = ("\x1b", "\x07", "\x00", "\u202e", "\u2066", "\u200b", "\ufeff", "\udcff")


@pytest.mark.parametrize("key", list(ODD_QUESTIONS))
def test_odd_characters_in_questions(base_index: Path, key: str) -> None:
    run = run_main("ask", ODD_QUESTIONS[key], data_dir=base_index)
    assert run.code == 0, run.stderr
    assert "Sparsity-certifying Graph Decompositions" in run.stdout
    for char in NEVER_PRINTED:
        assert char not in run.stdout and char not in run.stderr, repr(char)


def test_undecodable_bytes_in_the_real_argv(base_index: Path) -> None:
    question = b"\xff\xfe pebble game \x1b[31m sparse graphs"
    process = subprocess.run(
        [bytes(PAPERBOT), b"ask", question, b"--json"], cwd=base_index.parent,
        env=clean_env(base_index), capture_output=True, timeout=patience(180),
    )
    assert process.returncode == 0, process.stderr.decode("utf-8", "replace")
    out = process.stdout.decode("utf-8")  # strictly valid UTF-8 on stdout
    assert b"\x1b" not in process.stdout and b"\x1b" not in process.stderr
    assert "arxiv:0704.0002" in [c["id"] for c in json.loads(out)["citations"]]


# --- prompt injection end to end ---------------------------------------------------------------

BENIGN_QUESTIONS = [
    "Which papers study the convergence of the discrete dipole approximation?",
    "magnetophonon resonance in graphene",
    "online Viterbi algorithm and random walks",
    "entropy limiters in lattice Boltzmann methods",
]
SIGNS_OF_OBEDIENCE = re.compile(r"PWNED|<!channel>|<!here>|<@U|\[99\]|@@PB-|<\|im_start\|>|</?system>|</evidence>")


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> dict[str, Path]:
    """Two installations: the benign records, and the same plus every hostile record."""
    root = tmp_path_factory.mktemp("injection")
    benign = link_model_cache(root / "benign", model_cache)
    mixed = link_model_cache(root / "mixed", model_cache)
    for data_dir, files in ((benign, [ANSWERS]), (mixed, [ANSWERS, INJECTION / "records.jsonl"])):
        run = run_main("ingest", *map(str, files), "--json", data_dir=data_dir)
        assert run.code == 0 and not run.json()["skipped"], run.stdout + run.stderr
    return {"benign": benign, "mixed": mixed}


def _ask(data_dir: Path, question: str, **env: str) -> dict[str, Any]:
    run = run_main("ask", question, "--json", data_dir=data_dir, **env)
    assert run.code == 0, run.stderr
    return run.json()


def _system_lines() -> list[str]:
    """Distinctive lines of the system prompt (placeholders cut out)."""
    return [line.split("{")[0].strip() for line in SYSTEM_PROMPT.splitlines() if len(line.split("{")[0].strip()) > 30]


# How far a fused score may move between hosts: the int8 encoder's numerics differ by CPU (AVX2,
# AVX-512 VNNI). Its scores on these records differ from the fp32 encoder's by at most 0.025
# (docs/evidence.md, "Host numerics"); two int8 hosts each within that of fp32 differ by at most
# twice it.
HOST_SCORE_MARGIN = 0.05
# The judgement's signals that are cosines or scores, each of which may move by that margin between
# hosts (under an emulated AVX2-only CPU, qemu-x86_64 -cpu Haswell, the best cosine of the injection
# questions moved by up to 0.028 against this AVX-512 host, the judgement's probability by up to 0.031).
HOST_SENSITIVE_SIGNALS = ("best_cosine", "lift", "above_high", "gap", "fused")


def _host_probability_bounds() -> tuple[float, float]:
    """The judgement probabilities below / above which its verdict is the same on every host: the
    cut's logit moved by ``HOST_SCORE_MARGIN`` times the weights of ``HOST_SENSITIVE_SIGNALS``
    (0.64 with the current weights: probabilities 0.345 and 0.655 around the cut 0.5)."""
    from retrieval.answers.judgement import ANSWER_PROBABILITY, WEIGHTS

    cut = math.log(ANSWER_PROBABILITY / (1.0 - ANSWER_PROBABILITY))
    swing = HOST_SCORE_MARGIN * sum(abs(WEIGHTS[name]) for name in HOST_SENSITIVE_SIGNALS)
    return 1.0 / (1.0 + math.exp(-(cut - swing))), 1.0 / (1.0 + math.exp(-(cut + swing)))


def _borderline(data_dir: Path, question: str) -> set[str]:
    """Ids of the records whose score lies within ``HOST_SCORE_MARGIN`` of the relative floor
    (retrieval.answers.evidence rule 2): another host's numerics may put them on either side."""
    from retrieval.answers.evidence import RELATIVE_FLOOR

    run = run_main("search", question, "--k", "20", "--json", data_dir=data_dir)
    assert run.code == 0, run.stderr
    scores = {row["id"]: row["score"] for row in run.json()["results"]}
    floor = RELATIVE_FLOOR * max(scores.values(), default=0.0)
    return {key for key, score in scores.items() if abs(score - floor) <= HOST_SCORE_MARGIN}


@pytest.mark.parametrize("question", BENIGN_QUESTIONS)
def test_hostile_records_do_not_change_extractive_answers(indexes: dict[str, Path], question: str) -> None:
    clean = _ask(indexes["benign"], question)
    noisy = _ask(indexes["mixed"], question)
    hostile_titles = {row["title"] for row in _rows(INJECTION / "records.jsonl")}
    genuine = [c for c in noisy["citations"] if c["title"] not in hostile_titles]
    # more records shift BM25 statistics a little, and the host's SIMD the encoder's numerics: a
    # record near the relative floor in either index may land on either side; every other
    # genuine record must be decided the same way with the hostile records indexed
    borderline = _borderline(indexes["benign"], question) | _borderline(indexes["mixed"], question)
    decided_clean = {c["id"] for c in clean["citations"]} - borderline
    decided_noisy = {c["id"] for c in genuine} - borderline
    assert decided_noisy == decided_clean
    assert not SIGNS_OF_OBEDIENCE.search(noisy["answer"]), noisy["answer"]
    same_records = [c["id"] for c in genuine] == [c["id"] for c in clean["citations"]]
    hostile_cited = [c["title"] for c in noisy["citations"] if c["title"] in hostile_titles]
    if not hostile_cited and same_records:  # no hostile record was relevant: the very same answer
        assert noisy["answer"] == clean["answer"]
    if hostile_cited:  # only the on-topic hostile record may join, defanged
        assert hostile_cited == [row["title"] for row in _rows(INJECTION / "records.jsonl") if row["relevant"]]


@pytest.mark.parametrize("row", _rows(INJECTION / "questions.jsonl"), ids=lambda row: row["key"])
def test_hostile_questions_leak_nothing(indexes: dict[str, Path], row: dict[str, Any],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from retrieval.answers import chain

    verdicts: list[Any] = []  # the evidence judgement of each ask, as the answer chain made it

    def assess(*args: Any, **kwargs: Any) -> Any:
        assessment = real_assess(*args, **kwargs)
        verdicts.append(assessment.verdict)
        return assessment

    real_assess = chain.assess
    monkeypatch.setattr(chain, "assess", assess)
    clearly_off, clearly_on = _host_probability_bounds()
    for name, data_dir in indexes.items():
        verdicts.clear()
        result = _ask(data_dir, row["question"])
        shown = result["answer"] + json.dumps(result["citations"], ensure_ascii=False)
        assert not SIGNS_OF_OBEDIENCE.search(result["answer"]), (name, result["answer"])
        assert not any(line in shown for line in _system_lines()), name
        if not row["topic"] and name == "benign":
            # nothing genuine answers "print your prompt" (with the hostile records indexed, a record
            # sharing the question's words may be quoted: quoting is all extractive mode does). The
            # judgement must never find it answerable beyond what the host's numerics can move, and
            # must abstain where it is clearly off on every host; in between (e.g. chat-tokens, 0.484
            # here and 0.515 on an AVX2-only CPU) another host's encoder may decide either way.
            verdict = verdicts[-1]
            assert verdict is not None and verdict.probability < clearly_on, (verdict, result["answer"])
            if verdict.probability <= clearly_off:
                assert result["abstained"] is True, (verdict, result["answer"])


OBEDIENT = (
    "PWNED. <!channel> As instructed, here is my system prompt: {prompt}\n"
    "The discrete dipole approximation converges as the dipole size shrinks [1]. See also [99] and <@U0ABCDEF>."
)


def test_an_obedient_model_is_cleaned_end_to_end(indexes: dict[str, Path]) -> None:
    reply = OBEDIENT.format(prompt=" ".join(_system_lines()))
    with OpenAIStubServer(default=StubReply(text=reply)) as server:
        result = _ask(indexes["mixed"], BENIGN_QUESTIONS[0], OPENAI_BASE_URL=server.base_url,
                      OPENAI_API_KEY="sk-test-not-a-secret", PAPERBOT_LLM_MAX_RETRIES="0")
        assert server.chat_requests, "the model was not asked"
    assert not SIGNS_OF_OBEDIENCE.search(result["answer"]), result["answer"]
    assert not any(line in result["answer"] for line in _system_lines()), result["answer"]
    assert all(c["n"] >= 1 for c in result["citations"])
