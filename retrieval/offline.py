"""Switches that keep third-party libraries from calling home: nothing leaves the machine unless asked.

onnxruntime's wheels (1.32 here, Linux included) carry Microsoft's 1DS telemetry. Merely
importing the library writes a device id and an event database under
``~/.cache/Microsoft/DeveloperTools/.onnxruntime/``; about ten seconds later, and again when
the process exits, a libcurl thread resolves ``mobile.events.data.microsoft.com`` to upload the
events. The library reads ``ORT_DISABLE_TELEMETRY`` once, when it loads, so the switch has to be
set before the first ``import onnxruntime``: ``onnxruntime.disable_telemetry_events()`` comes
too late (the device id is already written). Observed under ``strace -f`` on a fresh ``HOME``;
``tests/reliability/test_no_network.py`` keeps it so.

The other libraries are switched off where they are used: Chroma with
``anonymized_telemetry=False`` (``retrieval/index/dense.py``), the Hugging Face hub with
``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` (``retrieval.index.encoders.base.model_path``).
"""

from __future__ import annotations

import os


def keep_onnxruntime_local() -> None:
    """Turn onnxruntime's telemetry off; call before anything imports onnxruntime.

    A value already in the environment wins (``ORT_DISABLE_TELEMETRY=0`` is the operator
    asking for telemetry).
    """
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
