"""Markdown reference of the MQTT topics: each topic of :class:`Topics`, how it is sent, an example payload.

``docs/mqtt.md`` is generated with this module (``python scripts/gen_reference.py``) from what
``edge_app.mqtt.topic_docs`` says of each topic; :func:`undocumented_topics` names any topic of
:class:`Topics` it does not describe yet.
"""
from __future__ import annotations

import inspect
from typing import List

from edge_app.mqtt.topic_docs import NOT_TOPICS, TOPIC_DOCS
from edge_app.mqtt.topics import Topics

# Fixed values, so the page is the same on every run.
_PLACEHOLDERS = {"camera_id": "<camera_id>", "label": "<label>", "zone": "<zone>", "line": "<line>"}
_SAMPLES = {"camera_id": "CAMERAID", "label": "LABEL", "zone": "ZONE", "line": "LINE"}
_ROOT = Topics("PREFIX", "DEVICE")


def _topic_members() -> List[str]:
    """Public members of Topics naming a topic, in the order the class declares them."""
    return [name for name, _ in vars(Topics).items()
            if not name.startswith("_") and name not in NOT_TOPICS and name not in ("prefix", "device_id")
            and (isinstance(vars(Topics)[name], property) or inspect.isfunction(vars(Topics)[name]))]


def undocumented_topics() -> List[str]:
    """Topics of :class:`Topics` that :data:`TOPIC_DOCS` does not describe."""
    return [name for name in _topic_members() if name not in TOPIC_DOCS]


def topic_pattern(member: str) -> str:
    """The topic of ``Topics.<member>`` with ``R`` for the root and ``<camera_id>``-style placeholders."""
    value = getattr(_ROOT, member)
    if callable(value):
        params = list(inspect.signature(value).parameters)
        value = value(*(_SAMPLES[p] for p in params))
    topic = "R" + value[len(_ROOT.root):]
    for param, sample in _SAMPLES.items():
        topic = topic.replace(sample, _PLACEHOLDERS[param])
    return topic


def topics_markdown() -> str:
    """The table of every topic, then an example of each payload."""
    members = [m for m in _topic_members() if m in TOPIC_DOCS]
    lines = ["| topic | retained | payload |", "|---|---|---|"]
    for member in members:
        doc = TOPIC_DOCS[member]
        payload = doc.payload.replace("|", "\\|")
        lines.append(f"| `{topic_pattern(member)}` | {doc.retained} | {payload} |")
    lines += ["", "Examples (the payload as sent, from the builders the appliance publishes with):", ""]
    for member in members:
        doc = TOPIC_DOCS[member]
        if doc.example is not None:
            lines += [f"`{topic_pattern(member)}`", "", "```json" if doc.example().startswith(b"{") else "```",
                      doc.example().decode("utf-8"), "```", ""]
    return "\n".join(lines).rstrip("\n") + "\n"
