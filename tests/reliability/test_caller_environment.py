"""The reliability suite's clean environment: the caller's paperbot, OpenAI and Slack settings and
proxies are unset for every test, the test harness's own ``PAPERBOT_TESTS_*`` settings are not
(``PAPERBOT_TESTS_TIME_SCALE`` must reach ``patience()`` inside these tests)."""

from __future__ import annotations

import os

import pytest

from tests.reliability.conftest import scrub_caller_environment
from tests.support.patience import TIME_SCALE, patience


def test_the_callers_settings_go_and_the_harness_settings_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"PAPERBOT_DATA_DIR": "/elsewhere", "OPENAI_API_KEY": "sk-caller", "SLACK_BOT_TOKEN": "xoxb-caller",
                        "HTTPS_PROXY": "http://proxy:3128", "https_proxy": "http://proxy:3128",
                        TIME_SCALE: "4", "PAPERBOT_TESTS_EMULATED_CPU": "Haswell"}.items():
        monkeypatch.setenv(name, value)
    scrub_caller_environment(monkeypatch)
    gone = ("PAPERBOT_DATA_DIR", "OPENAI_API_KEY", "SLACK_BOT_TOKEN", "HTTPS_PROXY", "https_proxy")
    assert not [name for name in gone if name in os.environ]
    assert os.environ[TIME_SCALE] == "4" and os.environ["PAPERBOT_TESTS_EMULATED_CPU"] == "Haswell"
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert patience(30) == 120
