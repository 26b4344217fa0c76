"""Class labels of a model and the class filter of the configuration.

Precedence: an explicit labels file (``model.labels``) wins, then the ``names`` entry of the
model's metadata (what the Ultralytics exporter writes), then the COCO-80 list shipped here.
"""
from __future__ import annotations

import ast
import difflib
import logging
import re
from importlib import resources
from pathlib import Path
from typing import List, Mapping, Optional, Sequence, Tuple

import numpy as np

from edge_app.config.schema_rules import label_problem
from edge_app.detect.errors import DetectorError

log = logging.getLogger(__name__)

#: Highest class id accepted from metadata; guards against a bogus map allocating a huge list.
MAX_CLASS_ID = 100_000
COCO80_RESOURCE = "coco80.txt"
MAX_LABELS_FILE_BYTES = 1024 * 1024
# Only names shaped like a class label are offered as "did you mean": labels may come from a file
# the configuration names, and a hint must never echo a line such as "password: ...".
_HINTABLE_LABEL = re.compile(r"[^\W_][\w .'()+&-]{0,63}")


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
    """One label per line; surrounding whitespace and blank lines are ignored.

    The file is named by the configuration, so it may be any file: anything that is not a short
    text list of labels is refused with a message that never quotes what the file contains.
    """
    file = Path(path)
    if not file.is_file():
        raise DetectorError(f"labels file {path} does not exist")
    try:
        with file.open("rb") as handle:
            data = handle.read(MAX_LABELS_FILE_BYTES + 1)
    except OSError as exc:
        raise DetectorError(f"labels file {path} cannot be read ({exc.strerror or type(exc).__name__})") from exc
    if len(data) > MAX_LABELS_FILE_BYTES:
        raise DetectorError(f"labels file {path} is larger than {MAX_LABELS_FILE_BYTES // 1024} KiB; "
                            "a labels file holds one short label per line")
    if b"\0" in data:
        raise DetectorError(f"labels file {path} is not a text file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DetectorError(f"labels file {path} is not UTF-8 text") from None
    numbered = [(number, line.strip()) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not numbered:
        raise DetectorError(f"labels file {path} contains no labels")
    for number, label in numbered:
        why = label_problem(label)
        if why:
            # Never quoted: the file may be any file (a password on line 3 must not reach an answer).
            raise DetectorError(f"labels file {path}: line {number} is not a label, labels {why}; "
                                "is this the right file?")
    labels = [label for _, label in numbered]
    if len(labels) > MAX_CLASS_ID + 1:
        raise DetectorError(f"labels file {path} has more than {MAX_CLASS_ID + 1} labels")
    return labels


def coco80_labels() -> List[str]:
    """The 80 COCO class names in the order every COCO-trained YOLO uses."""
    text = resources.files("edge_app.detect").joinpath(COCO80_RESOURCE).read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip()]


def check_metadata_labels(labels: Sequence[str]) -> None:
    """The labels of a model's metadata pass the checks configured labels pass (DetectorError)."""
    for class_id, label in enumerate(labels):
        why = label_problem(label)
        if why:
            raise DetectorError(f"the model's metadata label {class_id} {label[:64]!r} is not usable, labels {why}; "
                                "name the labels in a labels file (model.labels)")


def resolve_labels(labels_path: Optional[str], metadata: Mapping[str, str]) -> Tuple[List[str], str]:
    """The labels to use and where they came from ("file", "metadata" or "coco80").

    Labels from a file or the metadata are checked like configured ones (DetectorError).
    """
    if labels_path:
        return read_labels_file(labels_path), "file"
    from_metadata = parse_names(metadata.get("names"))
    if from_metadata:
        check_metadata_labels(from_metadata)
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
            close = difflib.get_close_matches(text, [label for label in index if _HINTABLE_LABEL.fullmatch(label)], n=1)
            hints.append(f"{text!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise DetectorError(f"model.classes names {', '.join(hints)}, which the model's labels do not contain")
    return np.unique(np.asarray(ids, dtype=np.int64))
