"""The Socket Mode door: Bolt's built-in handler, with every envelope's payload sorted first.

The same rule as the HTTP door (``bot/slack/http_door.py``): a payload of a shape paperbot does
not handle, or a handled one with fields of the wrong type, is acknowledged (an empty envelope
ack, so Slack does not retry it) with one log line and never reaches Bolt; a handled one reaches
Bolt as its validated fields only (``bot/slack/inbound.py``).

An event is claimed (``bot/slack/deliveries.py``) before its dispatch, so before its envelope is
acknowledged (Bolt acknowledges after the dispatch): with several replicas connected, the one
that gets the claim answers it, and a repeat is acknowledged without a dispatch.
"""

from __future__ import annotations

import logging

from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_sdk.socket_mode.builtin import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from bot.slack.deliveries import Deliveries
from bot.slack.inbound import Ignored, read_payload

log = logging.getLogger(__name__)


class SocketDoor(SocketModeHandler):
    """``SocketModeHandler`` that reads each payload through ``inbound.read_payload``."""

    deliveries: Deliveries | None = None  # the event claims (set by ``SlackRuntime``)

    def handle(self, client: SocketModeClient, req: SocketModeRequest) -> None:  # type: ignore[override]  # as its parent
        payload = read_payload(req.payload) if isinstance(req.payload, dict) else Ignored(
            "an envelope whose payload is not an object", malformed=True)
        if isinstance(payload, Ignored):
            log.log(logging.INFO if payload.malformed else logging.DEBUG, "acknowledged and ignored %s", payload.reason)
            client.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id))
            return
        req.payload = payload.body
        delivery = self.deliveries.begin(payload.body) if self.deliveries and payload.kind == "event" else None
        if self.deliveries and payload.kind == "event" and delivery is None:
            log.info("dropped repeated delivery of %s", payload.body.get("event_id"))
            client.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id))
            return
        try:
            super().handle(client, req)
        finally:
            if delivery is not None:
                delivery.release()
