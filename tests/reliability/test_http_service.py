"""`paperbot serve --http` as a real process: signatures, a burst of questions, hostile text, secrets.

One server for the module (``bench.load.ServeProcess``): a copy of the base index, the Slack
Web API stand-in of ``tests/slack/``, fake secrets for every credential and an LLM endpoint
that refuses connections (so every answer takes the fallback path and logs why).

* Signatures: the Slack engineer's tests cover a bad, a missing, a stale and a foreign-secret
  signature; here the edges of the 5-minute window (299 s old or ahead is accepted, 301 s
  is not), timestamps in the future or not numbers, a body changed after signing, another
  signature version.
* A burst of mentions at once: each answered exactly once, acks under 3 s (``bench/load.py``
  in small).
* Questions over the size limit, and with control, bidirectional and zero-width characters,
  get a specific reply and nothing else; the server keeps serving.
* Last, the server is stopped and everything it printed, logged or posted is searched for the
  secret values.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.load import CHANNEL, CallClock, ServeProcess, mention_body, run_load, signed_headers, wait_quiet
from bot.slack.http_server import uvicorn_config
from tests.reliability.helpers import FAKE_SECRETS, log_texts, secrets_found
from tests.slack.stand_in import SlackStandIn

pytestmark = pytest.mark.slow

BURST = 20
CHALLENGE = "rel1ability-challenge-0123456789"


class Service:
    def __init__(self, server: ServeProcess, api: SlackStandIn, data_dir: Path) -> None:
        self.server, self.api, self.data_dir = server, api, data_dir
        self.http = httpx.Client(timeout=30, trust_env=False)
        self._n = 0

    def post(self, body: bytes, headers: dict[str, str]) -> httpx.Response:
        return self.http.post(self.server.events_url, content=body, headers=headers)

    def mention(self, text: str) -> tuple[httpx.Response, str]:
        self._n += 1
        ts = f"{int(time.time())}.{self._n:06d}"
        body = mention_body(text, user=f"UREL{self._n:05d}", ts=ts, event_id=f"EvREL{ts}",
                            team=self.api.team_id, bot_user_id=self.api.bot_user_id)
        return self.post(body, signed_headers(self.server.signing_secret, body)), ts

    def replies(self, ts: str) -> list[str]:
        """Text and blocks of every bot message in the thread of ``ts``, as they look now."""
        with self.api._changed:  # the stand-in's lock (its server threads write messages)
            messages = [m for m in self.api.messages[CHANNEL].values() if m.get("thread_ts") == ts]
        return [json.dumps({"text": m.get("text"), "blocks": m.get("blocks")}, ensure_ascii=False) for m in messages]

    def final_reply(self, ts: str, timeout: float = 60.0) -> str:
        """The reply in the thread of ``ts`` once it is an answer or an error."""
        def final() -> str | None:
            return next((shown for shown in self.replies(ts) if "paperbot_vote_up" in shown or ":warning:" in shown), None)

        return self.api.wait_for(final, timeout=timeout, what=f"the reply in thread {ts}")


@pytest.fixture(scope="module")
def service(base_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    import shutil

    data_dir = tmp_path_factory.mktemp("service") / "data"
    shutil.copytree(base_index, data_dir, symlinks=True)
    api = SlackStandIn(bot_user_id="UBOTREL", team_id="T0REL").start()
    server = ServeProcess(
        data_dir, api.api_url, signing_secret=FAKE_SECRETS["SLACK_SIGNING_SECRET"],
        bot_token=FAKE_SECRETS["SLACK_BOT_TOKEN"],
        env={"OPENAI_API_KEY": FAKE_SECRETS["OPENAI_API_KEY"], "SLACK_APP_TOKEN": FAKE_SECRETS["SLACK_APP_TOKEN"],
             "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "PAPERBOT_LLM_MAX_RETRIES": "0",
             "PAPERBOT_LLM_TIMEOUT": "2", "PAPERBOT_SLACK_WORKERS": "4"},
    )
    server.start()
    site = Service(server, api, data_dir)
    try:
        yield site
    finally:
        site.http.close()
        server.stop()
        api.stop()


# --- signatures and the replay window --------------------------------------------------------


def _challenge() -> bytes:
    return json.dumps({"token": "x", "challenge": CHALLENGE, "type": "url_verification"}).encode()


def _post_signed_at(service: Service, body: bytes, age: int, *, tries: int = 5) -> httpx.Response:
    """``body`` signed with a timestamp ``age`` whole seconds before now, as the server sees it.

    The timestamp is whole seconds and the server's clock is not: a request signed at
    ``int(now) + 301`` and checked 1 s later (a busy CI host) is only 300.x s ahead, inside the
    window. So the request is sent early in a second, and a response that came back in a later
    second than the one signed is sent again: only then is the server's distance known to
    be ``|age|`` to ``|age| + 1`` seconds on the side the test means.
    """
    for _ in range(tries):
        into_the_second = time.time() % 1
        if into_the_second > 0.5:  # start in the first half of a second
            time.sleep(1 - into_the_second)
        now = int(time.time())
        response = service.post(body, signed_headers(service.server.signing_secret, body, timestamp=now - age))
        if time.time() < now + 1:
            return response
    raise AssertionError(f"no request of {tries} was answered within the second it was signed in")


@pytest.mark.parametrize("age", [0, 299, -299], ids=["now", "299s-old", "299s-ahead"])
def test_signed_requests_inside_the_window_are_accepted(service: Service, age: int) -> None:
    body = _challenge()
    response = _post_signed_at(service, body, age)
    assert response.status_code == 200 and CHALLENGE in response.text


@pytest.mark.parametrize("case", [
    "301s-old", "301s-ahead", "a-day-ahead",
    "not-a-number", "empty-timestamp",
    "body-changed", "v1-signature", "signature-of-nothing",
])
def test_requests_outside_the_window_or_tampered_are_rejected(service: Service, case: str) -> None:
    body = _challenge()
    calls_before = len(service.api.calls)
    if case in ("301s-old", "301s-ahead"):
        response = _post_signed_at(service, body, 301 if case == "301s-old" else -301)
    else:
        response = service.post(body, _tampered_headers(service.server.signing_secret, body, case))
    assert response.status_code == 401, (response.status_code, response.text[:200])
    assert CHALLENGE not in response.text
    assert len(service.api.calls) == calls_before  # nothing reached a listener


def _tampered_headers(secret: str, body: bytes, case: str) -> dict[str, str]:
    now = int(time.time())
    return {
        "a-day-ahead": lambda: signed_headers(secret, body, timestamp=now + 86_400),
        "not-a-number": lambda: {**signed_headers(secret, body), "X-Slack-Request-Timestamp": "soon"},
        "empty-timestamp": lambda: {**signed_headers(secret, body), "X-Slack-Request-Timestamp": ""},
        "body-changed": lambda: signed_headers(secret, body.replace(b"rel1ability", b"reliability")),
        "v1-signature": lambda: {**(h := signed_headers(secret, body)), "X-Slack-Signature": "v1=" + h["X-Slack-Signature"][3:]},
        "signature-of-nothing": lambda: signed_headers(secret, b""),
    }[case]()


def test_a_replayed_event_inside_the_window_is_answered_once(service: Service) -> None:
    clock = CallClock()
    service.api.on_record = clock
    try:
        response, ts = service.mention("pebble game sparse graph decompositions")
        assert response.status_code == 200
        sent = response.request
        replay = {k: v for k, v in sent.headers.items() if k.lower().startswith(("x-slack", "content-type"))}
        again = service.post(sent.content, replay)
        assert again.status_code == 200  # a valid signature: accepted, then recognised as a repeat
        assert "Sparsity-certifying" in service.final_reply(ts)
        wait_quiet(clock, 1.0, limit=20)
    finally:
        service.api.on_record = None
    assert len(service.replies(ts)) == 1


# --- a burst ---------------------------------------------------------------------------------


def test_the_server_settings_hold_a_burst() -> None:
    """Slack delivers events in bursts: the accept queue and the concurrency limit hold one
    (socketserver's default backlog of 5 reset 154 of 200 in bench/load.py)."""

    async def app(scope: object, receive: object, send: object) -> None:
        return None

    config = uvicorn_config(app)
    assert config.backlog >= 128
    assert config.limit_concurrency is not None and config.limit_concurrency > 200


def test_a_burst_of_mentions_is_answered_exactly_once(service: Service) -> None:
    questions = [f"Which papers discuss {topic}?" for topic in (
        "pebble games and sparse graphs", "the evolution of the Earth-Moon system", "Rosenbrock methods",
        "domain decomposition preconditioners", "dark matter field fluid models", "multigrid solvers",
        "Krylov subspace methods", "partial differential equations on parallel computers",
    )]
    report = run_load(service.server, service.api, [questions[i % len(questions)] for i in range(BURST)],
                      answer_timeout=120, quiet=0.5)
    assert report.transport_errors == [] and report.non_200 == 0
    assert report.dropped == [] and report.duplicated == [] and report.errors == [] and report.unfinished == []
    assert report.answered_once == BURST
    assert max(report.ack_seconds) < 3.0


# --- hostile questions -------------------------------------------------------------------------


def test_an_overlong_question_is_capped_with_a_notice(service: Service) -> None:
    response, ts = service.mention("pebble games on sparse graphs " * 200)  # 6,000 characters
    assert response.status_code == 200
    reply = service.final_reply(ts)
    assert "capped at 2,000 characters" in reply and "Sparsity-certifying" in reply, reply[:800]
    assert len(service.replies(ts)) == 1


HOSTILE_QUESTIONS = [
    pytest.param("control", "pebble game\x00 sparse\x1b[31m graphs\x07\x08\x7f", id="control"),
    pytest.param("bidi", "\u202egraphs sparse\u202c pebble \u2066game\u2069", id="bidi"),
    pytest.param("zero-width", "pe\u200bbble ga\u200dme spa\ufeffrse graphs", id="zero-width"),
    pytest.param("fullwidth", "\uff50\uff45\uff42\uff42\uff4c\uff45 game sparse graphs", id="fullwidth"),
    pytest.param("combining", "pe\u0337\u031bbble\u0336 ga\u0338me sparse graphs", id="combining"),
    pytest.param("emoji-cjk", "\U0001f9ee pebble game \u7a00\u758f\u56fe sparse graphs \U0001f4c8", id="emoji-cjk"),
    pytest.param("lone-surrogate", "pebble game \ud800 sparse graphs", id="lone-surrogate"),
    pytest.param("only-controls", "\x00\x01\x1b\u200b\u202e", id="only-controls"),
]


@pytest.mark.parametrize(("key", "question"), HOSTILE_QUESTIONS)
def test_unicode_and_control_characters_get_an_answer_or_a_specific_error(
    service: Service, key: str, question: str
) -> None:
    response, ts = service.mention(question)
    assert response.status_code == 200
    if key == "only-controls":  # nothing is left once they are removed at the door: an empty mention gets the help
        reply = service.api.wait_for(lambda: next((shown for shown in service.replies(ts) if "/paperbot summarize" in shown),
                                                  None), timeout=60, what=f"the help in thread {ts}")
    else:
        reply = service.final_reply(ts)
        assert "Sparsity-certifying" in reply, reply[:500]
    assert "Sorry, something went wrong" not in reply, reply[:500]  # no unexpected failure
    for char in ("\x00", "\x1b", "\x07", "\u202e", "\ud800"):  # nothing of the kind is echoed into Slack
        assert json.dumps(char, ensure_ascii=False)[1:-1] not in reply, repr(char)


GARBAGE = [b"{not json", b"payload=%7Bbroken", b"\xff\xfe\x00garbage", b"[]"]


@pytest.mark.parametrize("signed", [True, False], ids=["signed", "unsigned"])
@pytest.mark.parametrize("body", [
    *GARBAGE,
    b"{}", b"", b"token=x&team_id=T0REL",
])
def test_garbage_bodies_get_a_4xx_and_the_server_keeps_serving(service: Service, body: bytes, signed: bool) -> None:
    headers = signed_headers(service.server.signing_secret if signed else "not-the-secret", body)
    headers["Content-Type"] = "application/json" if body[:1] in (b"{", b"[") else "application/x-www-form-urlencoded"
    response = service.post(body, headers)
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    if not signed:
        assert response.status_code == 401
    health = service.http.get(service.server.events_url.replace("/slack/events", "/healthz"))
    assert health.text == "ok"


# --- last: nothing printed, logged or posted contains a secret ---------------------------------


def test_no_secret_in_output_logs_or_posts(service: Service) -> None:
    response, ts = service.mention("which papers study Rosenbrock methods?")  # one more fallback answer
    assert response.status_code == 200
    service.final_reply(ts)
    assert service.server.stop() == 0  # SIGTERM: a clean stop
    output = service.server.output()
    assert "listening on" in output and "stopping" in output
    posted = json.dumps([call.params for call in service.api.calls], ensure_ascii=False)
    texts = {"server output": output, "posted to Slack": posted, **log_texts(service.data_dir)}
    assert secrets_found(texts) == []
