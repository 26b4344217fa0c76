import pytest

from edge_app.detect.base import DetectorError
from edge_app.detect.labels import class_ids_for, coco80_labels, parse_names, read_labels_file, resolve_labels


@pytest.mark.parametrize(
    "text, expected",
    [
        ("{0: 'person', 1: 'bicycle'}", ["person", "bicycle"]),
        ("{'0': 'cat', '1': 'dog'}", ["cat", "dog"]),
        ("['cat', 'dog']", ["cat", "dog"]),
        ("{0: 'a', 2: 'c'}", ["a", "1", "c"]),  # a gap keeps ids aligned
        ("{1: 'b', 0: 'a'}", ["a", "b"]),
        (None, None),
        ("", None),
        ("{0: person}", None),  # not a literal
        ("__import__('os').system('false')", None),  # never executed
        ("{'x': 'a'}", None),
        ("{-1: 'a'}", None),
        ("{1000000000: 'a'}", None),  # bogus id range
        ("42", None),
    ],
)
def test_parse_names(text, expected):
    assert parse_names(text) == expected


def test_coco80():
    labels = coco80_labels()
    assert len(labels) == 80 and labels[0] == "person" and labels[5] == "bus" and labels[79] == "toothbrush"


def test_labels_file_skips_blank_lines(tmp_path):
    path = tmp_path / "labels.txt"
    path.write_text("\ufeffcat\n  dog \n\nbird\n\n", encoding="utf-8")
    assert read_labels_file(str(path)) == ["cat", "dog", "bird"]


@pytest.mark.parametrize("content", [None, "", "\n\n"])
def test_unusable_labels_file_is_an_error(tmp_path, content):
    path = tmp_path / "labels.txt"
    if content is not None:
        path.write_text(content)
    with pytest.raises(DetectorError, match="labels.txt"):
        read_labels_file(str(path))


@pytest.mark.parametrize(
    "use_file, metadata, expected_first, source",
    [
        (True, {"names": "{0: 'meta'}"}, "from-file", "file"),
        (False, {"names": "{0: 'meta'}"}, "meta", "metadata"),
        (False, {"names": "garbage("}, "person", "coco80"),
        (False, {}, "person", "coco80"),
    ],
)
def test_resolve_labels_precedence(tmp_path, use_file, metadata, expected_first, source):
    path = tmp_path / "labels.txt"
    path.write_text("from-file\n")
    labels, found = resolve_labels(str(path) if use_file else None, metadata)
    assert (labels[0], found) == (expected_first, source)


@pytest.mark.parametrize(
    "keep, expected",
    [
        ([], None),
        (["bus"], [5]),
        (["bus", "person", "bus"], [0, 5]),
        (["0"], [0]),  # a class id given as text
        (["tie", "79"], [27, 79]),
    ],
)
def test_class_ids_for(keep, expected):
    ids = class_ids_for(keep, coco80_labels())
    assert (ids.tolist() if ids is not None else None) == expected


def test_unknown_class_is_an_error_with_a_hint():
    with pytest.raises(DetectorError, match="did you mean 'bus'"):
        class_ids_for(["buss"], coco80_labels())


@pytest.mark.parametrize("names", ["{0: 'person', 1: 'bus/#'}", "['per+son']", "{0: ' '}", "['a\\tb']"])
def test_metadata_labels_pass_the_checks_configured_labels_pass(names):
    with pytest.raises(DetectorError, match="model's metadata"):
        resolve_labels(None, {"names": names})
