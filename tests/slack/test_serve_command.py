"""`paperbot serve`: configuration errors name the variable; `serve --http` as a real process."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bot.cli import main
from tests.slack.conftest import BOT_TOKEN, SECRET
from tests.slack.helpers import final_answer
from tests.slack.slack_requests import SlackSender
from tests.slack.stand_in import SlackStandIn


@pytest.fixture
def isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No .env from the repository; a private data dir."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PAPERBOT_DATA_DIR", str(tmp_path / "data"))
    return tmp_path


@pytest.mark.parametrize(("args", "env", "named"), [
    (["serve", "--http"], {"SLACK_BOT_TOKEN": BOT_TOKEN}, "SLACK_SIGNING_SECRET"),
    (["serve", "--http"], {"SLACK_SIGNING_SECRET": SECRET}, "SLACK_BOT_TOKEN"),
    (["serve"], {"SLACK_BOT_TOKEN": BOT_TOKEN}, "SLACK_APP_TOKEN"),
    (["serve", "--http"], {"SLACK_BOT_TOKEN": "xoxp-user-token-1234", "SLACK_SIGNING_SECRET": SECRET}, "xoxb-"),
])
def test_missing_or_wrong_settings_are_named(isolated_cwd: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str], args: list[str],
                                             env: dict[str, str], named: str) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert named in err
    for value in env.values():
        assert value not in err  # never echo a secret


def test_rejected_token_is_a_config_error(isolated_cwd: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str], stand_in: SlackStandIn) -> None:
    stand_in.fail_next("auth.test", status=200, error="invalid_auth")
    for name, value in {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SECRET,
                        "SLACK_API_URL": stand_in.api_url}.items():
        monkeypatch.setenv(name, value)
    assert main(["serve", "--http", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "Slack rejected SLACK_BOT_TOKEN" in err and BOT_TOKEN not in err


@pytest.mark.slow
def test_serve_http_process_answers_a_signed_mention(index_copy: Path, stand_in: SlackStandIn, tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("SLACK_", "OPENAI_", "PAPERBOT_"))}
    env.update(PAPERBOT_DATA_DIR=str(index_copy), SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_SIGNING_SECRET=SECRET,
               SLACK_API_URL=stand_in.api_url, HF_HUB_OFFLINE="1", PAPERBOT_REPLICA_ID="replica-7")
    process = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "serve", "--http", "--host", "127.0.0.1", "--port", "0"],
        cwd=tmp_path, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    seen: list[str] = []  # every line, kept for the check of the replica's name
    assert process.stderr is not None
    stderr = process.stderr

    def pump() -> None:
        for line in stderr:
            seen.append(line)
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    try:
        url = None
        while url is None:
            line = lines.get(timeout=60)
            found = re.search(r"listening on (http://127\.0\.0\.1:\d+/slack/events)", line)
            url = found.group(1) if found else None
        sender = SlackSender(url, SECRET, bot_user_id=stand_in.bot_user_id, team=stand_in.team_id)
        response, ts = sender.mention("which papers study the discrete dipole approximation?")
        assert response.status_code == 200
        try:
            final = final_answer(stand_in, timeout=90)  # the process loads the embedding model first
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nserver log:\n{_drain(lines)}") from None
        assert stand_in.messages["CGENERAL1"][final.params["ts"]]["thread_ts"] == ts
        assert "*[1]* <https://" in final.text() and "Yurkin" in final.text()
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
    assert code == 0, _drain(lines)
    # the logs name the replica: every line, log records and the command's own (a traceback's
    # continuation lines aside, which follow a line that names it)
    logged = [line for line in seen if line.strip() and not line.startswith((" ", "Traceback"))]
    assert any("listening on" in line for line in logged) and any("stopping" in line for line in logged)
    assert [line for line in logged if "[replica-7]" not in line] == []


def _drain(lines: queue.Queue[str]) -> str:
    collected = []
    while not lines.empty():
        collected.append(lines.get_nowait())
    return "".join(collected)[-4000:]
