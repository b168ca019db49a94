"""Nothing leaves the machine: a first run of ingest, ask and summarize makes no connection attempt.

A namespace with no network makes connections fail quietly, so this suite records attempts
instead, with two recorders that need nothing beyond Python (and root, as in CI):

* **Packets.** The commands run in a new network namespace (``unshare(CLONE_NEWNET)``) whose only
  interface, ``lo``, is up and owns *every* address (``local 0.0.0.0/0`` and ``local ::/0``
  routes, set over netlink). Any TCP connect or UDP datagram to any address, a DNS query to the
  configured name server included, therefore becomes a packet on ``lo`` (and fails at once
  with "connection refused"); a packet socket on ``lo`` records each one. This sees attempts
  made from C as well, such as onnxruntime's telemetry uploader (libcurl resolving
  ``mobile.events.data.microsoft.com``), which no Python hook can see.
* **Python calls.** A ``sitecustomize`` on ``PYTHONPATH`` installs an audit hook
  (``sys.addaudithook``) in every Python process the commands start: ``socket.connect``,
  ``sendto``/``sendmsg`` to an address, ``getaddrinfo`` and the ``gethostby*`` calls, with the
  stack that made them. It says *who* tried, and covers name lookups a resolver would answer
  from a local cache.

No loopback traffic is allowed either: embedded Chroma and the encoder need none. Each command
also runs with a fresh ``HOME`` (and no ``XDG_*``, Hugging Face or telemetry variables of the
caller), which must stay empty: a library that drops a device id or a cache into the home
directory (onnxruntime's ``~/.cache/Microsoft/DeveloperTools/.onnxruntime/deviceid``) is
caught even in a run too short for its uploader to start.

Not seen: a lookup handed to a daemon over a Unix socket (nscd, systemd-resolved through
``nss-resolve``) that then queries from the host's namespace; both are absent on the CI image
(``hosts: files dns``).

Run as a script, this file is the recorder inside the namespace (standard library only).
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

# --- inside the namespace (this file run as a script: keep to the standard library) ---------

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
RTM_NEWROUTE, NLM_F_REQUEST, NLM_F_ACK, NLM_F_CREATE, NLM_F_REPLACE = 24, 0x1, 0x4, 0x400, 0x100
RT_TABLE_LOCAL, RTPROT_STATIC, RT_SCOPE_HOST, RTN_LOCAL, RTA_OIF, RTA_TABLE = 255, 4, 254, 2, 4, 15
ETH_P_ALL, PACKET_OUTGOING = 0x0003, 4
CLONE_NEWNET = 0x40000000
#: TEST-NET-2 (RFC 5737): the recorder's self-check sends here before the commands run.
PROBE = ("198.51.100.1", 9)


def _enter_private_network() -> None:
    """Move this process into a new network namespace (``unshare --net``), or stop.

    Done by the recorder itself, before it changes any route, so that running this file can
    never touch the host's network; a namespace with more than ``lo`` is refused too.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        raise SystemExit(f"unshare(CLONE_NEWNET): {os.strerror(ctypes.get_errno())} (needs root)")
    interfaces = [name for _, name in socket.if_nameindex()]
    if interfaces != ["lo"]:
        raise SystemExit(f"not a private network namespace (interfaces {interfaces}): nothing changed")


def _loopback_up() -> None:
    import fcntl

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def _route_everything_to_loopback(family: int) -> None:
    """``ip route replace local 0.0.0.0/0 (or ::/0) dev lo table local``, over netlink."""
    attrs = struct.pack("=HHI", 8, RTA_OIF, socket.if_nametoindex("lo"))
    attrs += struct.pack("=HHI", 8, RTA_TABLE, RT_TABLE_LOCAL)
    body = struct.pack("=BBBBBBBBI", family, 0, 0, 0, RT_TABLE_LOCAL, RTPROT_STATIC, RT_SCOPE_HOST,
                       RTN_LOCAL, 0) + attrs
    flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE
    message = struct.pack("=IHHII", 16 + len(body), RTM_NEWROUTE, flags, 1, 0) + body
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.bind((0, 0))
        sock.send(message)
        reply = sock.recv(4096)
    error = struct.unpack_from("=i", reply, 16)[0]  # the nlmsgerr after the 16-byte header
    if error:
        raise OSError(-error, f"netlink RTM_NEWROUTE (family {family}): {os.strerror(-error)}")


def _dns_name(payload: bytes) -> str | None:
    """The first question's name of a DNS query, if the payload parses as one."""
    labels, at = [], 12
    try:
        while payload[at]:
            length = payload[at]
            labels.append(payload[at + 1 : at + 1 + length].decode("ascii", "replace"))
            at += 1 + length
    except IndexError:
        return None
    return ".".join(labels) or None


def _attempt(frame: bytes) -> dict[str, Any] | None:
    """A TCP connection attempt (SYN) or UDP datagram in a frame sent on ``lo``, else None."""
    kind = struct.unpack_from("!H", frame, 12)[0]
    packet = frame[14:]
    if kind == 0x0800 and len(packet) >= 20:
        proto, header = packet[9], (packet[0] & 0x0F) * 4
        dst, payload = socket.inet_ntop(socket.AF_INET, packet[16:20]), packet[header:]
    elif kind == 0x86DD and len(packet) >= 40:
        proto, dst, payload = packet[6], socket.inet_ntop(socket.AF_INET6, packet[24:40]), packet[40:]
    else:
        return None
    if proto == 6 and len(payload) >= 14 and payload[13] & 0x12 == 0x02:  # SYN without ACK
        return {"proto": "tcp", "dst": dst, "port": struct.unpack_from("!H", payload, 2)[0]}
    if proto == 17 and len(payload) >= 8:
        port = struct.unpack_from("!H", payload, 2)[0]
        return {"proto": "udp", "dst": dst, "port": port, "dns": _dns_name(payload[8:]) if port == 53 else None}
    return None


class PacketRecorder:
    """Records every connection attempt and datagram sent on ``lo``, from a background thread."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self._sock.bind(("lo", 0))
        self._sock.settimeout(0.2)
        self._seen: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                frame, address = self._sock.recvfrom(65535)
            except TimeoutError:
                continue
            if address[2] == PACKET_OUTGOING and (attempt := _attempt(frame)):
                with self._lock:
                    self._seen.append(attempt)

    def take(self) -> list[dict[str, Any]]:
        """What was sent so far (after a short drain: a frame is queued when it is sent)."""
        time.sleep(0.3)
        with self._lock:
            seen, self._seen = self._seen, []
        return seen

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._sock.close()


def _self_check(recorder: PacketRecorder) -> None:
    """Prove the recorder sees a TCP connect and a UDP datagram before trusting its silence."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.sendto(b"probe", PROBE)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
        tcp.settimeout(2)
        with suppress(OSError):  # refused, as every connection in here is
            tcp.connect(PROBE)
    seen = {(a["proto"], a["dst"], a["port"]) for a in recorder.take()}
    missing = {("udp", *PROBE), ("tcp", *PROBE)} - seen
    if missing:
        raise SystemExit(f"the packet recorder did not see its own probes {sorted(missing)}; saw {sorted(seen)}")


def _set_up() -> tuple[PacketRecorder, list[str]]:
    """A private namespace whose ``lo`` owns every address, and a recorder proven to see sends."""
    _enter_private_network()
    _loopback_up()
    _route_everything_to_loopback(socket.AF_INET)
    notes = []
    try:
        _route_everything_to_loopback(socket.AF_INET6)
    except OSError as exc:  # no IPv6 in this kernel: nothing can be sent over it either
        notes.append(f"IPv6 not routed: {exc}")
    recorder = PacketRecorder()
    _self_check(recorder)
    return recorder, notes


def record_inside_namespace(spec_path: Path) -> None:
    """Set the namespace up, run each command of the spec and write what each one sent."""
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    recorder, notes = _set_up()
    results = []
    for command in spec["commands"]:
        start = time.monotonic()
        try:
            proc = subprocess.run(command["argv"], env=command["env"], cwd=command["cwd"],
                                  capture_output=True, text=True, timeout=command["timeout"])
            code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            code, stdout, stderr = -1, str(exc.stdout or ""), f"timed out after {command['timeout']} s"
        results.append({"code": code, "stdout": stdout, "stderr": stderr, "packets": recorder.take(),
                        "seconds": round(time.monotonic() - start, 1)})
    recorder.close()
    Path(spec["out"]).write_text(json.dumps({"notes": notes, "results": results}), encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1] == "--check":  # can this machine record? (the tests skip when it cannot)
        _set_up()[0].close()
    else:
        record_inside_namespace(Path(sys.argv[1]))
    sys.exit(0)


# --- the tests -------------------------------------------------------------------------------

import pytest  # noqa: E402

from bench.common import clean_env  # noqa: E402
from tests.reliability.helpers import PAPERBOT, ROOT  # noqa: E402
from tests.support.patience import patience  # noqa: E402

SAMPLE = ROOT / "retrieval" / "sample" / "arxiv_sample.jsonl"

#: Installed in every Python process of the commands (via PYTHONPATH): logs network calls.
AUDIT_HOOK = '''
import json, os, socket, sys, traceback

_LOG = os.environ["NO_NETWORK_AUDIT_LOG"]
_NAMES = {"socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex", "socket.gethostbyaddr"}
_SENDS = {"socket.connect", "socket.sendto", "socket.sendmsg"}


def _write(record):
    record.update(pid=os.getpid(), argv=sys.argv[:3])
    fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps(record, default=repr) + "\\n").encode())
    finally:
        os.close(fd)


def _hook(event, args):
    if event in _SENDS:
        sock, address = args[0], args[1]
        if address is None or getattr(sock, "family", None) == socket.AF_UNIX:
            return
        target = address
    elif event in _NAMES:
        target = args[0]
    else:
        return
    _write({"event": event, "target": target, "stack": traceback.format_stack(limit=12)[:-1]})


_write({"event": "started"})
sys.addaudithook(_hook)
'''

#: A process that keeps the encoder loaded, as the Slack bot does: onnxruntime's uploader first
#: runs about 9 s after the library loads (measured: 8 s of life sent nothing, 9 s sent DNS queries).
LONG_LIVED = """
import time
from retrieval.config import Settings
from retrieval.index.encoders.loading import load_encoder

load_encoder(Settings()).encode(["a question that keeps the encoder busy"])
time.sleep(12)
"""

ENCODED_AHEAD = """
from retrieval.config import Settings
from retrieval.index.encoders import loading
from retrieval.index.encoders.encode_ahead import EncoderProcess, ahead_of

texts = ["a title encoded by the child", "another title"]
encoder = loading.onnx_encoder(Settings().encoder_cache_dir, "onnx-int8")
with ahead_of(encoder, texts, EncoderProcess.start()) as ahead:
    assert ahead.process.wait_ready(120), ahead.process.failure
    ahead.encode(texts)
    assert ahead.from_process == 2, ahead.process.failure
"""

#: What the caller's environment must not decide for the product (it must switch these itself).
CALLER_SWITCHES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME", "HF_DATASETS_OFFLINE",
                   "ORT_DISABLE_TELEMETRY", "ANONYMIZED_TELEMETRY", "TORCH_HOME", "MPLCONFIGDIR",
                   "PYTHONPATH", "PYTHONSTARTUP", "PYTHONNOUSERSITE", "DO_NOT_TRACK")


def _can_make_namespaces() -> str | None:
    """Why this machine cannot run the namespace recorder, or None when it can."""
    if not sys.platform.startswith("linux"):
        return "network namespaces are Linux only"
    if os.geteuid() != 0:
        return "needs root: unshare --net, routes and a packet socket (CI runs as root)"
    probe = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--check"],
                           capture_output=True, text=True, timeout=patience(60))
    if probe.returncode != 0:
        lines = probe.stderr.strip().splitlines() or ["no message"]
        return f"cannot record a network namespace here (unshare --net, lo, routes, packet socket): {lines[-1]}"
    return None


_NO_NAMESPACES = _can_make_namespaces()
needs_namespaces = pytest.mark.skipif(_NO_NAMESPACES is not None, reason=_NO_NAMESPACES or "")


def _first_run_env(tmp_path: Path, data_dir: Path, **extra: str) -> dict[str, str]:
    """A first run: fresh data dir and HOME, the audit hook, none of the caller's switches."""
    home, hooks = tmp_path / "home", tmp_path / "hooks"
    home.mkdir(exist_ok=True)
    hooks.mkdir(exist_ok=True)
    (hooks / "sitecustomize.py").write_text(AUDIT_HOOK, encoding="utf-8")
    env = {key: value for key, value in clean_env(data_dir).items()
           if key not in CALLER_SWITCHES and not key.startswith("XDG_")}
    env.update(HOME=str(home), PYTHONPATH=str(hooks), NO_NETWORK_AUDIT_LOG=str(tmp_path / "audit.jsonl"))
    env.update(extra)
    return env


def _run_without_network(tmp_path: Path, commands: list[list[str]], env: dict[str, str],
                         timeout: float = 300) -> list[dict[str, Any]]:
    """Run ``commands`` one after the other in a namespace whose packets are recorded."""
    timeout = patience(timeout)
    spec: dict[str, Any] = {
        "out": str(tmp_path / "recorded.json"),
        "commands": [{"argv": argv, "env": env, "cwd": str(tmp_path), "timeout": timeout} for argv in commands],
    }
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), str(spec_path)],
                          capture_output=True, text=True, timeout=timeout * len(commands) + 60)
    assert proc.returncode == 0, f"the namespace recorder failed:\n{proc.stderr[-3000:]}"
    return json.loads(Path(spec["out"]).read_text(encoding="utf-8"))["results"]


def _audit(tmp_path: Path) -> tuple[int, list[dict[str, Any]]]:
    """(processes that installed the hook, network calls they made)."""
    log = tmp_path / "audit.jsonl"
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    return sum(r["event"] == "started" for r in records), [r for r in records if r["event"] != "started"]


def _describe(calls: list[dict[str, Any]]) -> str:
    return "\n".join(f"{c['event']} {c['target']} from {c['argv']}:\n{''.join(c['stack'][-6:])}" for c in calls[:5])


def _targets(packets: list[dict[str, Any]]) -> list[str]:
    """Each distinct destination once: ``udp 10.0.0.53:53 (DNS mobile.events.data.microsoft.com)``."""
    return sorted({f"{p['proto']} {p['dst']}:{p['port']}" + (f" (DNS {p['dns']})" if p.get("dns") else "")
                   for p in packets})


def _home_files(tmp_path: Path) -> list[str]:
    """What the commands left in the fresh HOME, besides paperbot's own encoder cache (~/.cache/paperbot)."""
    home = tmp_path / "home"
    files = (str(p.relative_to(home)) for p in home.rglob("*"))
    return sorted(f for f in files if f not in (".cache", ".cache/paperbot") and not f.startswith(".cache/paperbot/"))


def _hosts_use_dns() -> bool:
    try:
        lines = Path("/etc/nsswitch.conf").read_text(encoding="utf-8").splitlines()
    except OSError:
        return True  # glibc's default: files, then dns
    return any(line.split()[:1] == ["hosts:"] and "dns" in line.split() for line in lines)


def _small_file(tmp_path: Path) -> tuple[Path, str]:
    """Eight bundled sample records as JSONL, and the first author of the first one."""
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()[:8]
    path = tmp_path / "small.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, json.loads(lines[0])["authors"][0]["name"]


@needs_namespaces
@pytest.mark.slow
def test_first_ingest_ask_and_summarize_make_no_connection_attempt(tmp_path: Path) -> None:
    records, author = _small_file(tmp_path)
    data_dir = tmp_path / "data"  # fresh: the first ingest exports the ONNX encoder, as a user's does
    commands = [
        [str(PAPERBOT), "ingest", str(records), "--json"],
        [str(PAPERBOT), "ask", "What is known about modular forms of half integral weight?", "--json"],
        [str(PAPERBOT), "summarize", author, "--json"],
        [sys.executable, "-c", LONG_LIVED],  # the Slack bot's case: telemetry that waits for a long-lived process
        [sys.executable, "-c", ENCODED_AHEAD],  # the encoding process a large `paperbot ingest` starts
    ]
    results = _run_without_network(tmp_path, commands, _first_run_env(tmp_path, data_dir))

    for argv, result in zip(commands, results, strict=True):
        name = (argv[1] if argv[0] == str(PAPERBOT) else "a process keeping the encoder loaded"
                if argv[-1] == LONG_LIVED else "an encoding process")
        assert result["code"] == 0, f"{name} failed without a network:\n{result['stderr'][-2000:]}"
        assert result["packets"] == [], f"{name} tried to reach the network: {_targets(result['packets'])}"
    assert json.loads(results[0]["stdout"])["added"] == 8
    assert json.loads(results[1]["stdout"])["citations"]
    started, calls = _audit(tmp_path)
    # every command, and the child of the last one (started by the first too, when its file is large)
    assert started >= len(commands) + 1, "the audit hook was not installed in the commands' processes"
    assert calls == [], f"network calls from Python:\n{_describe(calls)}"
    assert _home_files(tmp_path) == [], "the commands wrote into a fresh HOME (a device id, a cache?)"


@needs_namespaces
def test_the_recorders_catch_connections_from_python_and_from_c(tmp_path: Path) -> None:
    """The recorders can fail: a Python connect, and a lookup made by C code behind Python's back."""
    python = (
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('203.0.113.7', 443), timeout=2)\n"
        "except OSError:\n"
        "    pass\n"
    )
    from_c = (  # libc's getaddrinfo called directly: no audit event, only the packet shows it
        "import ctypes, ctypes.util\n"
        "libc = ctypes.CDLL(ctypes.util.find_library('c'))\n"
        "result = ctypes.c_void_p()\n"
        "libc.getaddrinfo(b'telemetry.invalid.example', b'443', None, ctypes.byref(result))\n"
    )
    env = _first_run_env(tmp_path, tmp_path / "data")
    results = _run_without_network(tmp_path, [[sys.executable, "-c", python], [sys.executable, "-c", from_c]],
                                   env, timeout=60)

    assert {(p["proto"], p["dst"], p["port"]) for p in results[0]["packets"]} >= {("tcp", "203.0.113.7", 443)}
    if _hosts_use_dns():  # else libc answers from /etc/hosts alone and sends nothing
        assert any((p.get("dns") or "").startswith("telemetry.invalid.example") for p in results[1]["packets"]), \
            results[1]
    started, calls = _audit(tmp_path)
    assert started == 2
    assert [(c["event"], c["target"]) for c in calls] == [
        ("socket.getaddrinfo", "203.0.113.7"), ("socket.connect", ["203.0.113.7", 443])]


def test_importing_onnxruntime_through_the_encoder_module_writes_no_device_id(tmp_path: Path) -> None:
    """onnxruntime's telemetry is off before it loads (fast, no root: its device id is the tell)."""
    env = _first_run_env(tmp_path, tmp_path / "data")
    code = "import retrieval.index.encoders.onnx_runtime\nimport onnxruntime\n"
    proc = subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONPATH": str(ROOT)}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=patience(120))
    assert proc.returncode == 0, proc.stderr
    assert _home_files(tmp_path) == [], "onnxruntime's telemetry is on: it wrote its device id"


def test_the_encoding_process_writes_no_device_id(tmp_path: Path) -> None:
    """The child ``paperbot ingest`` starts imports onnxruntime too: its telemetry is off there as well."""
    env = _first_run_env(tmp_path, tmp_path / "data")
    env.pop("ORT_DISABLE_TELEMETRY", None)
    code = ("from retrieval.index.encoders import worker_process\n"
            "child = worker_process.spawn()\n"
            "worker_process.end(child)\n"  # it imports its libraries, then reads the end of its input
            "assert child.returncode == 0, child.returncode\n")
    proc = subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONPATH": str(ROOT)}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=patience(120))
    assert proc.returncode == 0, proc.stderr
    assert _home_files(tmp_path) == [], "onnxruntime's telemetry is on in the encoding process: it wrote its device id"
