"""Class labels of a model and the class filter of the configuration.

Precedence: an explicit labels file (``model.labels``) wins, then the ``names`` entry of the
model's metadata (what the Ultralytics exporter writes), then the COCO-80 list shipped here.
"""
from __future__ import annotations

import ast
import difflib
import logging
from importlib import resources
from pathlib import Path
from typing import List, Mapping, Optional, Sequence, Tuple

import numpy as np

from edge_app.detect.base import DetectorError

log = logging.getLogger(__name__)

#: Highest class id accepted from metadata; guards against a bogus map allocating a huge list.
MAX_CLASS_ID = 100_000
COCO80_RESOURCE = "coco80.txt"


def parse_names(text: Optional[str]) -> Optional[List[str]]:
    """Labels from a metadata ``names`` value, or None when it is absent or malformed.

    Accepts a Python literal dict ``{0: 'person', ...}`` (string keys too) or list. Parsed with
    ``ast.literal_eval``: metadata comes from a file the user downloaded, so it is never executed.
    Ids missing from a dict get their number as label so ids and positions stay aligned.
    """
    if not text or not text.strip():
        return None
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        log.warning("ignoring the model's 'names' metadata: not a Python literal")
        return None
    if isinstance(value, (list, tuple)):
        return [str(label) for label in value]
    if not isinstance(value, dict) or not value:
        log.warning("ignoring the model's 'names' metadata: expected a dict or list of labels")
        return None
    try:
        by_id = {int(key): str(label) for key, label in value.items()}
    except (TypeError, ValueError):
        log.warning("ignoring the model's 'names' metadata: class ids are not integers")
        return None
    highest = max(by_id)
    if min(by_id) < 0 or highest > MAX_CLASS_ID:
        log.warning("ignoring the model's 'names' metadata: class ids out of range")
        return None
    return [by_id.get(class_id, str(class_id)) for class_id in range(highest + 1)]


def read_labels_file(path: str) -> List[str]:
    """One label per line; surrounding whitespace and blank lines are ignored."""
    file = Path(path)
    if not file.is_file():
        raise DetectorError(f"labels file {path} does not exist")
    try:
        text = file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DetectorError(f"labels file {path} cannot be read ({exc})") from exc
    labels = [line.strip() for line in text.splitlines() if line.strip()]
    if not labels:
        raise DetectorError(f"labels file {path} contains no labels")
    return labels


def coco80_labels() -> List[str]:
    """The 80 COCO class names in the order every COCO-trained YOLO uses."""
    text = resources.files("edge_app.detect").joinpath(COCO80_RESOURCE).read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip()]


def resolve_labels(labels_path: Optional[str], metadata: Mapping[str, str]) -> Tuple[List[str], str]:
    """The labels to use and where they came from ("file", "metadata" or "coco80")."""
    if labels_path:
        return read_labels_file(labels_path), "file"
    from_metadata = parse_names(metadata.get("names"))
    if from_metadata:
        return from_metadata, "metadata"
    return coco80_labels(), "coco80"


def class_ids_for(keep_labels: Sequence[str], labels: Sequence[str]) -> Optional[np.ndarray]:
    """Class ids selected by ``model.classes``; None when the list is empty (keep all).

    An entry is a label, or a class id written as a number. An entry matching neither is an
    error rather than a silently empty filter: a typo would otherwise drop every detection.
    """
    if not keep_labels:
        return None
    index = {label: class_id for class_id, label in reversed(list(enumerate(labels)))}
    ids: List[int] = []
    unknown: List[str] = []
    for entry in keep_labels:
        text = str(entry).strip()
        if text in index:
            ids.append(index[text])
        elif text.isdigit():
            ids.append(int(text))
        else:
            unknown.append(text)
    if unknown:
        hints = []
        for text in unknown:
            close = difflib.get_close_matches(text, list(index), n=1)
            hints.append(f"{text!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise DetectorError(f"model.classes names {', '.join(hints)}, which the model's labels do not contain")
    return np.unique(np.asarray(ids, dtype=np.int64))
