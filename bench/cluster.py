"""Replicas: asks/s and answer latency through a load balancer, 1 replica against 3, in one run.

    python bench/cluster.py [--quick] [--records 100000] [--askers 20] [--asks 200] [--json]

Starts what ``tests/cluster/test_replicas.py`` starts: a PostgreSQL server (the test suite's
``tests/support/postgres.py``), a ``chroma run`` server, the Slack Web API stand-in, and
``paperbot serve --http`` replicas (each its own data dir, the same database and Chroma server,
extractive answers, ``PAPERBOT_SLACK_WORKERS`` = ``--workers``) behind a round-robin proxy
(``tests/support/proxy.py``).

**Records are synthetic**: ``--records`` papers with titles and abstracts drawn from a made-up
vocabulary (so BM25 has words to match), written through ``PaperIndex.upsert`` into PostgreSQL
with **random unit vectors written straight to Chroma** instead of embeddings (the encoder is
only named, never run, at build time; questions are still embedded by each replica).

Then, for 1 and then 3 replicas: every replica answers one warm-up question (it builds its BM25
index from the database), and ``--askers`` people ask ``--asks`` questions in all, each asking
again as soon as the answer to the previous one is posted (a closed loop): asks/s = answers /
wall time; latency = event sent -> final answer recorded by the stand-in (p50, p95); peak RSS of
every replica (``VmHWM``). Printed as a table, with the ratios of 3 replicas to 1, and as JSON
with ``--json``. The host (CPU, cores, load) is printed too: on a 2-core host the replicas, the
database, Chroma and this process share two cores.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # runnable as a plain script
    sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from bench.cli import host_line  # noqa: E402
from bench.common import load_note, markdown_table, percentile_ms  # noqa: E402
from bench.load import ServeProcess  # noqa: E402
from retrieval.config import Settings  # noqa: E402
from retrieval.index.encoders.loading import load_encoder  # noqa: E402
from retrieval.index.paper_index import PaperIndex  # noqa: E402
from retrieval.records.paper import Author, Paper, Provenance  # noqa: E402
from retrieval.storage.database import close_databases  # noqa: E402
from tests.slack.slack_requests import signature  # noqa: E402
from tests.slack.stand_in import Call, SlackStandIn  # noqa: E402
from tests.support.chroma import ChromaServer  # noqa: E402
from tests.support.postgres import PostgresServer  # noqa: E402
from tests.support.proxy import RoundRobinProxy  # noqa: E402

SECRET = "cluster-bench-signing-secret-0000"
BOT_TOKEN = "xoxb-0000-0000-clusterbenchtoken"
TEAM, BOT, CHANNEL = "T0BENCH", "UBOTBENCH", "CBENCH0001"
COLLECTION = "cluster-bench"
VOTE = "paperbot_vote_up"
BATCH = 2000


# --- synthetic records -------------------------------------------------------------------------


def vocabulary(size: int = 4000, seed: int = 7) -> list[str]:
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghiklmnoprstuvz"))
    return ["".join(rng.choice(letters, size=int(rng.integers(5, 11)))) for _ in range(size)]


def synthetic_papers(count: int, words: Sequence[str], seed: int = 11) -> list[Paper]:
    rng = np.random.default_rng(seed)
    papers = []
    for n in range(count):
        picks = rng.integers(0, len(words), size=48)
        title = " ".join(words[i] for i in picks[:7]).capitalize()
        papers.append(Paper(
            title=f"{title} ({n})", abstract=" ".join(words[i] for i in picks[7:]) + ".",
            authors=[Author(name=f"Ada Synth{n % 5000}"), Author(name=f"Bo Maker{(n * 7) % 3000}")],
            published=str(1990 + n % 35), provenance=[Provenance(source="bench", source_id=f"synthetic-{n}")],
        ))
    return papers


def random_unit_vectors(encoder: Any, papers: Sequence[Paper]) -> np.ndarray:
    """The ``embed`` function of ``PaperIndex``: a random unit vector per record, seeded by its id."""
    out = np.empty((len(papers), encoder.dimension), dtype=np.float32)
    for row, paper in enumerate(papers):
        vector = np.random.default_rng(abs(hash(paper.id)) % (2**32)).standard_normal(encoder.dimension)
        out[row] = vector / np.linalg.norm(vector)
    return out


def build_index(settings: Settings, count: int, words: Sequence[str]) -> float:
    """Write ``count`` synthetic records (random vectors) into the database and Chroma; seconds."""
    started = time.perf_counter()
    index = PaperIndex.open(settings, load_encoder(settings), embed=random_unit_vectors)
    try:
        papers = synthetic_papers(count, words)
        for start in range(0, count, BATCH):
            index.upsert(papers[start:start + BATCH])
            print(f"  {min(start + BATCH, count):,} records written", file=sys.stderr, flush=True)
    finally:
        index.close()
        close_databases()
    return time.perf_counter() - started


# --- the replicas ------------------------------------------------------------------------------


class Answers:
    """The stand-in's ``on_record`` hook: when each awaited thread got its final answer."""

    def __init__(self, api: SlackStandIn) -> None:
        self.api = api
        self._waiting: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def expect(self, ts: str) -> threading.Event:
        with self._lock:
            return self._waiting.setdefault(ts, threading.Event())

    def __call__(self, call: Call) -> None:
        if call.method not in ("chat.update", "chat.postMessage") or VOTE not in json.dumps(call.params.get("blocks")):
            return
        if call.method == "chat.postMessage":
            thread = call.params.get("thread_ts")
        else:  # the message updated was posted in the thread earlier
            thread = (self.api.messages[CHANNEL].get(call.params.get("ts", "")) or {}).get("thread_ts")
        with self._lock:
            waiting = self._waiting.get(thread or "")
        if waiting is not None:
            waiting.set()


@dataclass
class Run:
    replicas: int
    asks: int
    seconds: float
    asks_per_second: float
    p50_ms: float
    p95_ms: float
    unanswered: int
    peak_rss_mb: list[float]


_IDS = iter(range(1, 10**9))  # event ids unique over the whole run: a repeated id is (rightly) never answered again


class Asker:
    """Signed mentions through the proxy; each waits for its answer."""

    def __init__(self, proxy: RoundRobinProxy, answers: Answers, words: Sequence[str]) -> None:
        self.url = proxy.url + "/slack/events"
        self.answers = answers
        self.words = words
        self.http = httpx.Client(timeout=30, trust_env=False, limits=httpx.Limits(max_connections=64))
        self._lock = threading.Lock()

    def ask(self, *, to: int | None = None, timeout: float = 300.0) -> float | None:
        """Seconds from sending to the final answer; None when none came within ``timeout``."""
        with self._lock:
            n = next(_IDS)
        rng = np.random.default_rng(n)
        question = " ".join(self.words[i] for i in rng.integers(0, len(self.words), size=4))
        ts = f"{int(time.time())}.{n:06d}"
        event = {"type": "app_mention", "user": f"UASK{n:07d}", "text": f"<@{BOT}> {question}", "ts": ts,
                 "channel": CHANNEL, "event_ts": ts}
        body = json.dumps({"token": "unused", "team_id": TEAM, "api_app_id": "A0BENCH", "type": "event_callback",
                           "event": event, "event_id": f"EvBENCH{n:09d}", "event_time": int(time.time()),
                           "authorizations": [{"team_id": TEAM, "user_id": BOT, "is_bot": True}]}).encode()
        answered = self.answers.expect(ts)
        started = time.monotonic()
        for attempt in range(5):
            stamp = str(int(time.time()))
            headers = {"Content-Type": "application/json", "X-Slack-Request-Timestamp": stamp,
                       "X-Slack-Signature": signature(SECRET, stamp, body)}
            if to is not None and attempt == 0:
                headers["X-Proxy-To"] = str(to)
            if self.http.post(self.url, content=body, headers=headers).status_code == 200:
                break
        return time.monotonic() - started if answered.wait(timeout) else None


def start_replicas(count: int, root: Path, api: SlackStandIn, env: dict[str, str]) -> list[ServeProcess]:
    replicas = []
    for i in range(count):
        data_dir = root / f"replica-{i}" / "data"
        data_dir.mkdir(parents=True)
        replicas.append(ServeProcess(data_dir, api.api_url, signing_secret=SECRET, bot_token=BOT_TOKEN,
                                     env={**env, "PAPERBOT_REPLICA_ID": f"replica-{i}"}))
    with ThreadPoolExecutor(count) as starting:
        list(starting.map(lambda replica: replica.start(), replicas))
    return replicas


def measure(count: int, root: Path, api: SlackStandIn, answers: Answers, words: Sequence[str], env: dict[str, str],
            *, askers: int, asks: int) -> Run:
    replicas = start_replicas(count, root / f"run-{count}", api, env)
    proxy = RoundRobinProxy([r.events_url.removesuffix("/slack/events") for r in replicas]).start()
    asker = Asker(proxy, answers, words)
    try:
        with ThreadPoolExecutor(count) as warming:  # each replica builds its BM25 index and loads its encoder
            warm = list(warming.map(lambda i: asker.ask(to=i, timeout=900), range(count)))
        if any(seconds is None for seconds in warm):
            raise RuntimeError("a replica did not answer its warm-up question")
        latencies: list[float | None] = []
        left = [asks]
        lock = threading.Lock()

        def person() -> None:
            while True:
                with lock:
                    if left[0] <= 0:
                        return
                    left[0] -= 1
                latency = asker.ask()
                with lock:
                    latencies.append(latency)

        started = time.monotonic()
        with ThreadPoolExecutor(askers) as people:
            for future in [people.submit(person) for _ in range(askers)]:
                future.result()
        seconds = time.monotonic() - started
        done = [latency for latency in latencies if latency is not None]
        return Run(replicas=count, asks=asks, seconds=seconds, asks_per_second=len(done) / seconds,
                   p50_ms=percentile_ms(done, 50), p95_ms=percentile_ms(done, 95),
                   unanswered=len(latencies) - len(done), peak_rss_mb=[r.peak_rss_mb() for r in replicas])
    finally:
        asker.http.close()
        proxy.stop()
        for replica in replicas:
            replica.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=100_000, help="synthetic records (default 100000)")
    parser.add_argument("--askers", type=int, default=20, help="people asking at once (default 20)")
    parser.add_argument("--asks", type=int, default=200, help="questions per configuration (default 200)")
    parser.add_argument("--workers", type=int, default=4, help="PAPERBOT_SLACK_WORKERS of each replica (default 4)")
    parser.add_argument("--quick", action="store_true", help="2,000 records, 60 questions")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.asks = 2000, 60
    print(host_line(), file=sys.stderr)
    root = Path(tempfile.mkdtemp(prefix="paperbot-cluster-bench-"))
    postgres = PostgresServer.start()
    chroma = ChromaServer(root / "chroma")
    api = SlackStandIn(bot_user_id=BOT, team_id=TEAM).start()
    answers = Answers(api)
    api.on_record = answers
    try:
        chroma.start()
        url = postgres.new_database()
        words = vocabulary()
        settings = Settings(_env_file=None, data_dir=root / "builder", database_url=url, chroma_url=chroma.url,
                            collection=COLLECTION, openai_api_key=None, chroma_timeout=300)
        print(f"writing {args.records:,} synthetic records (random unit vectors) ...", file=sys.stderr, flush=True)
        built = build_index(settings, args.records, words)
        env = {"PAPERBOT_DATABASE_URL": url, "PAPERBOT_CHROMA_URL": chroma.url, "PAPERBOT_COLLECTION": COLLECTION,
               "PAPERBOT_SLACK_WORKERS": str(args.workers), "PAPERBOT_SLACK_USER_QUEUE_LIMIT": "50",
               "PAPERBOT_ENCODER_CACHE_DIR": str(settings.encoder_cache_dir),  # the builder's encoder choice
               "PAPERBOT_CHROMA_TIMEOUT": "120"}  # a loaded 2-core host: a slow answer, not a failure
        runs = []
        for count in (1, 3):
            print(f"{count} replica(s): {args.askers} askers, {args.asks} questions ... ({load_note()})",
                  file=sys.stderr, flush=True)
            runs.append(measure(count, root, api, answers, words, env, askers=args.askers, asks=args.asks))
        one, three = runs
        ratios = {"asks_per_second": three.asks_per_second / one.asks_per_second,
                  "p50": three.p50_ms / one.p50_ms, "p95": three.p95_ms / one.p95_ms}
        result = {"records": args.records, "build_seconds": built, "askers": args.askers, "host": host_line(),
                  "load": load_note(), "runs": [asdict(run) for run in runs], "ratios_3_to_1": ratios}
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            rows = [[run.replicas, run.asks, f"{run.asks_per_second:.2f}", f"{run.p50_ms:.0f} ms",
                     f"{run.p95_ms:.0f} ms", run.unanswered, " / ".join(f"{mb:.0f}" for mb in run.peak_rss_mb)]
                    for run in runs]
            print(markdown_table(["replicas", "asks", "asks/s", "answer p50", "answer p95", "unanswered",
                                  "peak RSS per replica (MiB)"], rows))
            print(f"\n3 replicas / 1: asks/s x{ratios['asks_per_second']:.2f}, p50 x{ratios['p50']:.2f}, "
                  f"p95 x{ratios['p95']:.2f}; {args.records:,} records built in {built:.0f} s; {load_note()}")
        return 0 if all(run.unanswered == 0 for run in runs) else 1
    finally:
        api.stop()
        chroma.stop()
        postgres.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
