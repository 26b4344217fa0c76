"""checks: a decoder named in the configuration must be able to open its camera here, so
check-config, run and config writes refuse it up front instead of a camera in error later."""
import subprocess
import sys

import pytest

from edge_app.capture.video_decode.decoders import detect_decoders
from edge_app.config_change.checks import check_runtime
from edge_app.config.schema import AppConfig
from edge_app.config.staged_model import stage_dir

from tests.support.gst import require_gi


def config(model_path, decoder, source):
    return AppConfig(model={"path": str(model_path)}, cameras=[{"id": "cam", "source": source, "decoder": decoder}])


@pytest.mark.parametrize("decoder,source,words", [
    ("gstreamer", "http://cam.local/video.mjpg", "use decoder ffmpeg for them"),
    ("nvdec", "rtsp://cam.local/1", "PyNvVideoCodec"),
    ("auto", "http://cam.local/video.mjpg", None),
    ("ffmpeg", "rtsp://cam.local/1", None),
    ("gstreamer", "rtsp://cam.local/1", None),
    ("gstreamer", "test://bars", None),
])
def test_decoder_problems(model_path, decoder, source, words):
    if decoder == "gstreamer":
        require_gi()
    if decoder == "nvdec" and detect_decoders().get("nvdec").available:
        pytest.skip("this machine has nvdec")
    problems = check_runtime(config(model_path, decoder, source))
    if words is None:
        assert problems == []
    else:
        assert [p.loc for p in problems] == ["cameras.0.decoder"] and words in problems[0].msg


def test_csi_with_decoder_gstreamer_needs_jetpack_off_a_jetson(model_path):
    require_gi()
    if detect_decoders().get("gstreamer").hardware:
        pytest.skip("a Jetson has nvarguscamerasrc")
    problems = check_runtime(config(model_path, "gstreamer", "csi://0"))
    assert len(problems) == 1 and "nvarguscamerasrc" in problems[0].msg and "JetPack" in problems[0].msg


def test_an_unchanged_camera_is_not_checked_again(model_path):
    if detect_decoders().get("nvdec").available:
        pytest.skip("this machine has nvdec: the camera below would pass anyway")
    running = config(model_path, "nvdec", "rtsp://cam.local/1")
    assert check_runtime(running, previous=running) == []
    assert check_runtime(config(model_path, "nvdec", "rtsp://cam.local/2"), previous=running)


def test_check_config_exits_2_naming_the_decoder_field(tmp_path, model_path):
    require_gi()
    path = tmp_path / "c.yaml"
    path.write_text(f"cameras:\n  - id: c\n    source: http://cam.local/v.mjpg\n    decoder: gstreamer\n"
                    f"model:\n  path: {model_path}\nmqtt:\n  enabled: false\napi:\n  enabled: false\n")
    result = subprocess.run([sys.executable, "-m", "edge_app", "check-config", "-c", str(path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "cameras.0.decoder: decoder gstreamer reads rtsp://" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("change", [{"conf_threshold": 0.6}, {"iou_threshold": 0.3},
                                    {"conf_threshold": 0.1, "iou_threshold": 0.9}])
def test_a_threshold_change_reads_no_model_file(tmp_path, model_path, change):
    """Thresholds read no file: a storm of threshold PATCHes must not load the model's metadata
    once per request (that grew the appliance by hundreds of MB in the chaos soak). The model
    file is gone here, so any read of it would be a refusal."""
    copy = tmp_path / "model.onnx"
    copy.write_bytes(model_path.read_bytes())
    running = AppConfig(model={"path": str(copy)})
    copy.unlink()
    assert check_runtime(running.model_copy(update={"model": running.model.model_copy(update=change)}),
                         previous=running) == []


def test_a_changed_model_file_is_still_checked(tmp_path, model_path):
    running = AppConfig(model={"path": str(model_path)})
    moved = running.model_copy(update={"model": running.model.model_copy(update={"path": str(tmp_path / "none.onnx")})})
    assert [p.loc for p in check_runtime(moved, previous=running)] == ["model.path"]


def _fleet_config(model_path, tmp_path, classes, version="1"):
    return AppConfig(model={"path": str(model_path), "engine_dir": str(tmp_path / "engines"), "classes": classes,
                            "artifact": {"name": "gate", "version": version}})


def _stage(tmp_path, model_path, labels):
    folder = stage_dir(str(tmp_path / "engines"), "gate", "1")
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(model_path.read_bytes())
    (folder / "labels.txt").write_text("\n".join(labels) + "\n")
    (folder / "manifest.json").write_text("{}")  # what the checks read is only that staging finished


@pytest.mark.parametrize("classes,version,problem", [
    (["plate"], "1", None),  # a label of the fleet version, not of path (COCO): allowed
    (["person"], "1", "model.classes"),  # a label of path only: the fleet version would refuse it
    (["plate"], "2", None),  # not staged here yet: its load checks the classes (and keeps the old model)
])
def test_a_fleet_models_classes_are_checked_against_the_fleet_versions_labels(tmp_path, model_path, classes,
                                                                              version, problem):
    _stage(tmp_path, model_path, ["plate", "truck"])
    problems = check_runtime(_fleet_config(model_path, tmp_path, classes, version))
    assert [p.loc for p in problems] == ([problem] if problem else [])
    if problem:
        assert "person" in problems[0].msg
