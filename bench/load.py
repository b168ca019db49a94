"""Load test of `paperbot serve --http`: N signed Slack mentions at once, every one answered once.

    python bench/load.py [--quick] [-n 50 200] [--records 150] [--workers 4] [--keep DIR]

For each N: a `paperbot serve --http` subprocess over a small real index (the first
``--records`` lines of the bundled arXiv sample, ingested with `paperbot ingest`), its Web API
pointed (``SLACK_API_URL``) at a local stand-in that records every call. N correctly signed
``app_mention`` events, each from its own user in its own thread, are released together from
N threads over loopback. Then the bench waits (bounded) until every question has its final
answer and the server has been quiet for a moment, and reports:

* acked / answered once / lost / duplicated / reset: each event matched to the replies in its
  thread (a final answer is the reply message carrying the vote buttons). "Lost" is an event
  acknowledged with 200 that never got its answer (Slack will not send it again); "reset" is a
  connection the server did not accept (Slack would retry it minutes later). Both must be 0;
* ack latency p50 / p95 / max (Slack's limit is 3 s), answer latency p95 (event sent ->
  final answer recorded);
* ``/healthz`` p95 while the events are acknowledged (one probe at a time, every 50 ms): what
  the host and the event loop cost any request, signed or not;
* the host's 1-minute load average (``os.getloadavg()``) just before the burst and once every
  event is acknowledged: the acknowledgement times are only comparable at a similar load;
* the server's peak RSS (``VmHWM`` of the process).

Exit status 1 when an event was not acknowledged with 200, an answer is missing, duplicated or
an error, a progress message was left behind, or an ack took 3 s or more. Extractive
mode (no LLM), embedded Chroma, ``PAPERBOT_SLACK_WORKERS`` = ``--workers``. Timings depend on
the machine's load, printed with the table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # runnable as a plain script
    sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from bench.common import clean_env, load_note, markdown_table, percentile_ms  # noqa: E402
from bot.slack.blocks import WORKING_TEXT, queued_text  # noqa: E402
from tests.slack.slack_requests import signature  # noqa: E402
from tests.slack.stand_in import Call, SlackStandIn  # noqa: E402

PAPERBOT = Path(sys.executable).with_name("paperbot")
SAMPLE = REPO / "retrieval" / "sample" / "arxiv_sample.jsonl"
ACK_LIMIT = 3.0  # seconds: Slack retries an event it has not seen acknowledged by then
CHANNEL = "CLOAD0001"
BOT_TOKEN = "xoxb-0000-0000-loadbenchtoken"
SIGNING_SECRET = "load-bench-signing-secret-0000"
_LISTENING = re.compile(r"listening on (http://[^\s]+/slack/events)")
_VOTE = "paperbot_vote_up"


# --- the server under test ------------------------------------------------------------------


class ServeProcess:
    """`paperbot serve --http --port 0` as a subprocess; its output is kept for inspection.

    ``start`` returns once the server printed its address (and answers ``/healthz``); ``stop``
    sends SIGTERM (the server treats it like Ctrl-C) and waits, killing it after ``grace``.
    """

    def __init__(self, data_dir: Path, api_url: str, *, signing_secret: str = SIGNING_SECRET,
                 bot_token: str = BOT_TOKEN, env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.signing_secret = signing_secret
        self.env = clean_env(data_dir, SLACK_API_URL=api_url, SLACK_BOT_TOKEN=bot_token,
                             SLACK_SIGNING_SECRET=signing_secret, **(env or {}))
        self.process: subprocess.Popen[str] | None = None
        self.events_url = ""
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._ready = threading.Event()
        self._readers: list[threading.Thread] = []

    def start(self, timeout: float = 180.0) -> ServeProcess:
        self.process = subprocess.Popen(
            [str(PAPERBOT), "serve", "--http", "--host", "127.0.0.1", "--port", "0"],
            cwd=self.data_dir.parent, env=self.env, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        for stream, lines in ((self.process.stdout, self.stdout), (self.process.stderr, self.stderr)):
            reader = threading.Thread(target=self._read, args=(stream, lines), daemon=True)
            reader.start()
            self._readers.append(reader)
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.05):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("paperbot serve did not start:\n" + "".join(self.stderr[-30:]))
        health = self.events_url.replace("/slack/events", "/healthz")
        if httpx.get(health, timeout=5, trust_env=False).text != "ok":
            raise RuntimeError(f"{health} did not answer ok")
        return self

    def _read(self, stream: Any, lines: list[str]) -> None:
        for line in stream:
            lines.append(line)
            match = _LISTENING.search(line)
            if match:
                self.events_url = match.group(1)
                self._ready.set()

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def peak_rss_mb(self) -> float:
        """Peak resident memory of the server so far (``VmHWM``), in MiB."""
        try:
            status = Path(f"/proc/{self.pid}/status").read_text(encoding="ascii")
        except OSError:
            return float("nan")
        match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
        return int(match.group(1)) / 1024 if match else float("nan")

    def output(self) -> str:
        return "".join(self.stdout) + "".join(self.stderr)

    def stop(self, grace: float = 20.0) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=grace)
        for reader in self._readers:
            reader.join(timeout=5)
        return self.process.returncode


# --- signed events ---------------------------------------------------------------------------


def mention_body(question: str, *, user: str, ts: str, event_id: str, team: str, bot_user_id: str) -> bytes:
    event = {"type": "app_mention", "user": user, "text": f"<@{bot_user_id}> {question}", "ts": ts,
             "channel": CHANNEL, "event_ts": ts}
    return json.dumps({
        "token": "unused", "team_id": team, "api_app_id": "A0LOAD", "type": "event_callback", "event": event,
        "event_id": event_id, "event_time": int(time.time()),
        "authorizations": [{"team_id": team, "user_id": bot_user_id, "is_bot": True}],
    }).encode()


def signed_headers(secret: str, body: bytes, *, timestamp: int | None = None) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    return {"Content-Type": "application/json", "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": signature(secret, ts, body)}


# --- one run ---------------------------------------------------------------------------------


@dataclass
class LoadReport:
    """What one burst of N questions produced."""

    n: int
    answered_once: int
    dropped: list[str]  # event ts without a final answer
    duplicated: list[str]  # event ts with more than one final answer
    ack_seconds: list[float]
    answer_seconds: list[float]
    peak_rss_mb: float
    load_before: float = float("nan")  # the host's 1-minute load average just before the burst
    load_after: float = float("nan")  # ... and once every event was acknowledged
    health_seconds: list[float] = field(default_factory=list)  # /healthz while the events were acknowledged
    non_200: int = 0
    errors: list[str] = field(default_factory=list)  # threads with an error reply
    unfinished: list[str] = field(default_factory=list)  # threads where a progress message was left behind
    transport_errors: list[str] = field(default_factory=list)  # events whose POST failed (reset, refused)

    @property
    def ok(self) -> bool:
        return (not self.dropped and not self.duplicated and not self.non_200 and not self.errors
                and not self.unfinished and max(self.ack_seconds, default=0.0) < ACK_LIMIT)

    @property
    def lost(self) -> list[str]:
        """Acknowledged (200) events that never got their answer."""
        refused = {failure.split(":", 1)[0] for failure in self.transport_errors}
        return [ts for ts in self.dropped if ts not in refused]

    def row(self) -> list[str]:
        acked = self.n - self.non_200
        return [
            str(self.n), f"{acked}/{self.n}", f"{self.answered_once}/{self.n}", str(len(self.lost)),
            str(len(self.duplicated)), str(len(self.transport_errors)),
            f"{percentile_ms(self.ack_seconds, 50):.0f} ms", f"{percentile_ms(self.ack_seconds, 95):.0f} ms",
            f"{max(self.ack_seconds, default=float('nan')) * 1000:.0f} ms",
            f"{percentile_ms(self.health_seconds, 95):.0f} ms", f"{self.load_before:.1f} → {self.load_after:.1f}",
            f"{percentile_ms(self.answer_seconds, 95) / 1000:.1f} s", f"{self.peak_rss_mb:.0f} MiB",
        ]


HEADERS = ["N", "acked 200", "answered once", "lost", "duplicated", "reset", "ack p50", "ack p95", "ack max",
           "healthz p95", "load avg", "answer p95", "peak RSS"]


class CallClock:
    """Wall-clock arrival of every Web API call at the stand-in (its ``on_record`` hook)."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, Call]] = []
        self._lock = threading.Lock()

    def __call__(self, call: Call) -> None:
        with self._lock:
            self.seen.append((time.monotonic(), call))


def _replies_by_thread(api: SlackStandIn) -> dict[str, list[dict[str, Any]]]:
    with api._changed:  # the stand-in's lock: its server threads write these dicts
        messages = list(api.messages[CHANNEL].values())
    threads: dict[str, list[dict[str, Any]]] = {}
    for message in messages:
        if message.get("thread_ts"):
            threads.setdefault(message["thread_ts"], []).append(message)
    return threads


def _is_final(message: dict[str, Any]) -> bool:
    return _VOTE in json.dumps(message.get("blocks") or [])


def _is_error(message: dict[str, Any]) -> bool:
    """An apology or an error notice; an abstention's "no indexed paper is cited" note is an answer."""
    text = json.dumps(message.get("blocks") or [])
    return text.count(":warning:") > text.count(":warning: No indexed paper is cited")


_QUEUED_PREFIX = queued_text(1).split(" 1.")[0]  # ":hourglass: You're in position"


def _is_progress(message: dict[str, Any]) -> bool:
    """Still the "Working on it" or "you're in position N" message."""
    text = str(message.get("text") or "")
    return text == WORKING_TEXT or text.startswith(_QUEUED_PREFIX)


def run_load(server: ServeProcess, api: SlackStandIn, questions: Sequence[str], *,
             answer_timeout: float = 600.0, quiet: float = 1.0) -> LoadReport:
    """Send one question per entry of ``questions`` at once; wait for every answer; report."""
    clock = CallClock()
    api.on_record = clock
    n = len(questions)
    base = int(time.time())
    events = [(f"{base}.{i:06d}", f"U{i:08d}", f"EvLOAD{base}{i:06d}", question)
              for i, question in enumerate(questions)]
    sent: dict[str, float] = {}
    acks: list[float] = []
    statuses: list[int] = []
    acked: set[str] = set()
    failures: list[str] = []
    gate = threading.Barrier(n)
    http = httpx.Client(timeout=30, trust_env=False, limits=httpx.Limits(max_connections=n, max_keepalive_connections=0))

    def send(ts: str, user: str, event_id: str, question: str) -> None:
        body = mention_body(question, user=user, ts=ts, event_id=event_id, team=api.team_id, bot_user_id=api.bot_user_id)
        headers = signed_headers(server.signing_secret, body)
        gate.wait(timeout=60)
        started = time.monotonic()
        sent[ts] = started
        try:
            status = http.post(server.events_url, content=body, headers=headers).status_code
        except httpx.TransportError as exc:  # refused or reset: Slack would retry it; we count it
            failures.append(f"{ts}: {type(exc).__name__}: {exc}")
            status = 0
        acks.append(time.monotonic() - started)
        statuses.append(status)
        if status == 200:
            acked.add(ts)

    load_before = host_load()
    probe = HealthProbe(server.events_url.replace("/slack/events", "/healthz"))
    try:
        with ThreadPoolExecutor(max_workers=n, thread_name_prefix="load") as pool:
            futures = [pool.submit(send, *event) for event in events]
            probe.start()
            for future in futures:
                future.result()
    finally:
        probe.stop()
        http.close()
    load_after = host_load()

    def all_final() -> bool | None:
        """Every acknowledged event has its answer (an unacknowledged one never will)."""
        threads = _replies_by_thread(api)
        done = all(any(_is_final(m) or _is_error(m) for m in threads.get(ts, [])) for ts in acked)
        return True if done else None

    with suppress(AssertionError):  # reported below as dropped
        api.wait_for(all_final, timeout=answer_timeout, what=f"{n} final answers")
    wait_quiet(clock, quiet, limit=30.0)  # late duplicates would show up here
    api.on_record = None

    threads = _replies_by_thread(api)
    final_at = _final_times(clock, api)
    dropped, duplicated, errors, unfinished, answer_seconds = [], [], [], [], []
    for ts, *_ in events:
        replies = threads.get(ts, [])
        finals = [m for m in replies if _is_final(m)]
        if any(_is_error(m) for m in replies):
            errors.append(ts)
        if any(_is_progress(m) for m in replies):
            unfinished.append(ts)
        if not finals:
            dropped.append(ts)
        elif len(finals) > 1:
            duplicated.append(ts)
        else:
            answer_seconds.append(final_at.get(finals[0]["ts"], float("nan")) - sent[ts])
    return LoadReport(
        n=n, answered_once=n - len(dropped) - len(duplicated), dropped=dropped, duplicated=duplicated,
        ack_seconds=acks, answer_seconds=answer_seconds, peak_rss_mb=server.peak_rss_mb(),
        load_before=load_before, load_after=load_after, health_seconds=probe.seconds,
        non_200=sum(1 for status in statuses if status != 200), errors=errors, unfinished=unfinished,
        transport_errors=failures,
    )


def host_load() -> float:
    """The host's 1-minute load average (NaN where the OS has none)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


class HealthProbe:
    """``GET /healthz`` one at a time, every ``interval`` seconds, from ``start`` to ``stop``."""

    def __init__(self, url: str, *, interval: float = 0.05) -> None:
        self.url = url
        self.interval = interval
        self.seconds: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load-healthz", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=35)

    def _run(self) -> None:
        with httpx.Client(timeout=30, trust_env=False) as http:
            while not self._stop.is_set():
                started = time.monotonic()
                with suppress(httpx.TransportError):
                    http.get(self.url)
                    self.seconds.append(time.monotonic() - started)
                self._stop.wait(self.interval)


def _final_times(clock: CallClock, api: SlackStandIn) -> dict[str, float]:
    """Reply ts -> when the update that made it final reached the stand-in."""
    times: dict[str, float] = {}
    for at, call in clock.seen:
        if call.method == "chat.update" and call.status == 200 and _VOTE in json.dumps(call.params.get("blocks") or []):
            times.setdefault(str(call.params.get("ts")), at)
    return times


def wait_quiet(clock: CallClock, quiet: float, *, limit: float) -> None:
    """Return once no Web API call arrived for ``quiet`` seconds (at most ``limit`` seconds)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        last = clock.seen[-1][0] if clock.seen else 0.0
        if time.monotonic() - last >= quiet:
            return
        time.sleep(0.05)


# --- set-up ----------------------------------------------------------------------------------


def questions_from(records: Path, n: int) -> list[str]:
    """``n`` questions: titles of indexed records, cycled (each one has a relevant answer)."""
    titles = [json.loads(line)["title"] for line in records.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [f"Which papers discuss {titles[i % len(titles)].rstrip('.')}?" for i in range(n)]


def prepare_index(data_dir: Path, records: int) -> Path:
    """A data dir holding the first ``records`` sample records, ingested with the real CLI.

    The encoder's export is the machine's (``PAPERBOT_ENCODER_CACHE_DIR``, else the user cache
    dir): made once per machine, not per bench run.
    """
    (data_dir / "cache").mkdir(parents=True, exist_ok=True)
    corpus = data_dir.parent / f"sample_head{records}.jsonl"
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()[:records]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = subprocess.run([str(PAPERBOT), "ingest", str(corpus), "--json"], cwd=data_dir.parent,
                         env=clean_env(data_dir), capture_output=True, text=True, timeout=900)
    if run.returncode != 0:
        raise RuntimeError(f"paperbot ingest failed:\n{run.stderr[-2000:]}")
    return corpus


def bench(sizes: Sequence[int], *, records: int, workers: int, root: Path,
          progress: Callable[[str], None] = lambda text: None) -> list[LoadReport]:
    data_dir = root / "data"
    progress(f"indexing {records} sample records in {data_dir} ...")
    corpus = prepare_index(data_dir, records)
    reports = []
    for n in sizes:
        api = SlackStandIn(bot_user_id="UBOTLOAD", team_id="T0LOAD").start()
        server = ServeProcess(data_dir, api.api_url, env={"PAPERBOT_SLACK_WORKERS": str(workers),
                                                          "PAPERBOT_SLACK_USER_QUEUE_LIMIT": "5"})
        try:
            progress(f"N={n}: starting paperbot serve --http ...")
            server.start()
            progress(f"N={n}: sending {n} signed mentions at once ...")
            reports.append(run_load(server, api, questions_from(corpus, n)))
        finally:
            server.stop()
            api.stop()
    return reports


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, nargs="+", default=[50, 200], help="burst sizes (default 50 200)")
    parser.add_argument("--quick", action="store_true", help="one burst of 20 (under a minute)")
    parser.add_argument("--records", type=int, default=150, help="sample records to index (default 150)")
    parser.add_argument("--workers", type=int, default=4, help="PAPERBOT_SLACK_WORKERS of the server (default 4)")
    parser.add_argument("--keep", type=Path, help="build the index here and keep it (default: a temporary dir)")
    args = parser.parse_args(argv)
    sizes = [20] if args.quick else args.n
    note = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    started = time.monotonic()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        reports = bench(sizes, records=args.records, workers=args.workers, root=args.keep, progress=note)
    else:
        with tempfile.TemporaryDirectory(prefix="paperbot-load-") as tmp:
            reports = bench(sizes, records=args.records, workers=args.workers, root=Path(tmp), progress=note)
    print(markdown_table(HEADERS, [report.row() for report in reports]))
    print(f"\n{args.records} indexed records, {args.workers} workers, extractive answers; "
          f"{load_note()}; {time.monotonic() - started:.0f} s in all.")
    for report in reports:
        for label, items in (("lost after a 200", report.lost), ("duplicated", report.duplicated),
                             ("answered with an error", report.errors), ("left a progress message", report.unfinished)):
            if items:
                print(f"N={report.n}: {len(items)} {label}, e.g. thread {items[0]}")
        if report.non_200:
            print(f"N={report.n}: {report.non_200} events were not acknowledged with 200")
        for failure in report.transport_errors[:3]:
            print(f"N={report.n}: event {failure}")
    return 0 if all(report.ok for report in reports) else 1


if __name__ == "__main__":
    raise SystemExit(main())
