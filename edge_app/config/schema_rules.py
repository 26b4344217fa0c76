"""The rules every section of the configuration shares: strict models, ids, labels, and text
without control or invisible characters."""
from __future__ import annotations

import ipaddress
import re
import unicodedata
from typing import List, Optional, Tuple

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import Annotated

ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
MAX_AREA_LABELS = 128
MAX_LABEL_CHARS = 128
#: characters no label may hold: labels become MQTT topic levels (zone and line counts)
LABEL_TOPIC_CHARS = "#+/"
#: the shortest API or fleet token taken: shorter ones are guessed over the network
MIN_TOKEN_CHARS = 16
# A point of a zone or line: fractions of the frame, x to the right, y down.
Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
NormPoint = Tuple[Fraction, Fraction]
# MQTT topic and client id characters that brokers reject or that break topic filters.
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")
# Characters that show as nothing or reorder the text after them (bidirectional overrides and
# isolates, zero-width marks: category Cf), C1 controls, line and paragraph separators, lone
# surrogates: a name or label holding one reads as something else in a dashboard, a log, Home Assistant.
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Cc", "Zl", "Zp", "Cs"})


def _invisible_chars(text: str) -> str:
    """The invisible or reordering characters in ``text`` as "U+202E, U+2066", or "" when none."""
    found = sorted({ch for ch in text if unicodedata.category(ch) in _INVISIBLE_CATEGORIES})
    return ", ".join(f"U+{ord(ch):04X}" for ch in found)


def _no_control_chars(value: Optional[str], what: str) -> Optional[str]:
    if value is not None and _CONTROL_CHARS.search(value):
        raise ValueError(f"{what} may not contain control characters")
    hidden = _invisible_chars(value or "")
    if hidden:
        raise ValueError(f"{what} may not contain invisible or bidirectional formatting characters ({hidden})")
    return value


class _Strict(BaseModel):
    # allow_inf_nan=False: a number field never holds NaN or infinity (a YAML .inf, a JSON 1e400).
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


def label_problem(label: str) -> Optional[str]:
    """Why ``label`` cannot be a class label (None: it can), wherever it comes from.

    The one rule for configured labels, labels files, model metadata and the events API's
    ``label`` filter alike: labels become MQTT topic levels (counts per label, zones, lines). The answer never quotes the label, so a caller
    reading a file that may hold anything decides what to show.
    """
    if not label.strip():
        return "may not be empty"
    if len(label) > MAX_LABEL_CHARS:
        return f"may have at most {MAX_LABEL_CHARS} characters"
    if any(ch in label for ch in LABEL_TOPIC_CHARS) or _CONTROL_CHARS.search(label):
        return "may not contain #, +, / or control characters"
    hidden = _invisible_chars(label)
    if hidden:
        return f"may not contain invisible or bidirectional formatting characters ({hidden})"
    return None


def _clean_labels(labels: List[str]) -> List[str]:
    for index, label in enumerate(labels):
        why = label_problem(label)
        if why:
            raise ValueError(f"labels[{index}]: label {label[:MAX_LABEL_CHARS]!r} {why}")
    return labels


def is_loopback_host(host: str) -> bool:
    """True when ``host`` is loopback only (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104, localhost)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    # ::ffff:127.0.0.1 is how a dual-stack socket shows a loopback IPv4 peer.
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback
