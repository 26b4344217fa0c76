"""A labels file is named by the configuration, so it may be any file: nothing of it leaks into errors."""
import pytest

from edge_app.detect.base import DetectorError
from edge_app.detect.labels import MAX_LABELS_FILE_BYTES, class_ids_for, read_labels_file

SECRET = "hunter2-rtsp-password"


@pytest.mark.parametrize(
    "content, why",
    [
        (b"person\x00car\n", "not a text file"),
        (b"\x89PNG\r\n\x1a\n" + bytes(range(256)), "not a text file"),
        (b"person\n\xff\xfe" + SECRET.encode() + b"\n", "not UTF-8 text"),
        (b"person\n" + b"x" * (MAX_LABELS_FILE_BYTES + 1), "larger than"),
        (b"person\n" + ("y" * 200 + SECRET).encode() + b"\n", "is not a label"),
        (b"person\n" + SECRET.encode() + b"\x1b[2J\n", "is not a label"),
    ],
)
def test_files_that_are_not_label_lists_are_refused_without_quoting_them(tmp_path, content, why):
    path = tmp_path / "labels.txt"
    path.write_bytes(content)
    with pytest.raises(DetectorError, match=why) as caught:
        read_labels_file(str(path))
    assert SECRET not in str(caught.value) and "xxxx" not in str(caught.value)


def test_the_class_hint_never_echoes_a_line_that_is_not_a_label(tmp_path):
    """model.labels pointed at a config file: a typo in model.classes must not print its lines."""
    config_lines = [f"  source: rtsp://admin:{SECRET}@10.0.0.5/s", f"password: {SECRET}", "device_id: edge-01"]
    labels = ["person", "car"] + config_lines
    with pytest.raises(DetectorError) as caught:
        class_ids_for([f"password: {SECRET[:-1]}"], labels)
    assert f"password: {SECRET}" not in str(caught.value) and "did you mean" not in str(caught.value)
    with pytest.raises(DetectorError, match="did you mean 'person'"):
        class_ids_for(["persn"], labels)


def test_a_plain_labels_file_still_reads(tmp_path):
    path = tmp_path / "labels.txt"
    path.write_text("\ufeffperson\n\ntraffic light\nO'Brien's dog\n", encoding="utf-8")
    assert read_labels_file(str(path)) == ["person", "traffic light", "O'Brien's dog"]


def test_labels_unfit_for_mqtt_topics_are_refused_with_their_line_and_not_quoted(tmp_path):
    path = tmp_path / "labels.txt"
    path.write_text(f"person\n\n{SECRET}/x\n", encoding="utf-8")
    with pytest.raises(DetectorError, match=r"line 3 .*#, \+, /") as caught:
        read_labels_file(str(path))
    assert SECRET not in str(caught.value)
