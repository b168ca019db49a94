"""The Slack door: a Bolt app over the ``retrieval.assistant.Assistant`` facade.

``app.build_slack`` wires everything; ``listeners/`` registers one kind of listener per module;
``blocks`` and ``formatting`` are pure; ``jobs``/``answering``/``feedback`` do the slow work on
the ``queue``.
"""
