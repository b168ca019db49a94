"""bot/manifest.yaml validates against Slack's manifest JSON schema and matches the code.

The shared entry schema refers to Slack's versioned schemas by URL; offline, the version-1 URL
resolves to our own rules for the fields we use (tests/fixtures/slack/README.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

from bot.slack.listeners.commands import SLASH_COMMAND

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "slack"
REMOTE = "https://raw.githubusercontent.com/slackapi/manifest-schema/v0.5.0/schemas/"


def validator() -> jsonschema.Draft7Validator:
    rules = json.loads((FIXTURES / "manifest_rules.v1.schema.json").read_text())
    registry = Registry().with_resources([
        (f"{REMOTE}manifest.schema.1.0.0.json", Resource.from_contents(rules, default_specification=DRAFT7)),
        # paperbot ships a version-1 manifest; the version-2 branch must never be what validates it
        (f"{REMOTE}manifest.schema.2.0.0.json", Resource.from_contents({"not": {}}, default_specification=DRAFT7)),
    ])
    return jsonschema.Draft7Validator(json.loads((FIXTURES / "manifest.schema.json").read_text()), registry=registry)


def manifest() -> dict:
    return yaml.safe_load((ROOT / "bot" / "manifest.yaml").read_text())


def test_manifest_is_valid() -> None:
    errors = [error.message for error in validator().iter_errors(manifest())]
    assert errors == []


def test_schema_catches_a_typo() -> None:
    broken = manifest()
    broken["settings"]["socket_mode_enabeld"] = True
    assert list(validator().iter_errors(broken))


def test_schema_catches_bad_values() -> None:
    for path, value in [
        (("display_information", "name"), "p" * 36),
        (("features", "bot_user", "display_name"), "Paper Bot"),
        (("display_information", "background_color"), "blue"),
    ]:
        broken = manifest()
        target = broken
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        assert list(validator().iter_errors(broken)), path
    broken = manifest()
    broken["features"]["slash_commands"][0]["command"] = "paperbot"
    assert list(validator().iter_errors(broken))


def test_manifest_matches_what_the_app_uses() -> None:
    data = manifest()
    assert [c["command"] for c in data["features"]["slash_commands"]] == [SLASH_COMMAND]
    scopes = set(data["oauth_config"]["scopes"]["bot"])
    assert {"app_mentions:read", "chat:write", "commands", "im:history", "reactions:write", "files:write",
            "channels:history", "groups:history"} <= scopes
    events = set(data["settings"]["event_subscriptions"]["bot_events"])
    assert {"app_mention", "message.im", "message.channels", "message.groups", "app_home_opened"} <= events
    assert data["features"]["app_home"]["home_tab_enabled"] and data["settings"]["interactivity"]["is_enabled"]
