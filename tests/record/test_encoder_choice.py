"""encoder_choice: the encoder of masked recordings is a pure function of what the device has; check-config says it."""
from __future__ import annotations

from pathlib import Path

import pytest

from edge_app.config.file import parse_config
from edge_app.record.masked_encoder import recording_path
from edge_app.record.encoder_choice import (EncodeCapabilities, EncoderPath, choose_encoder, detect_capabilities,
                                            is_orin_nano, nvenc_problem)

NANO = "NVIDIA Jetson Orin Nano Developer Kit"
NX = "NVIDIA Jetson Orin NX Engineering Reference Developer Kit"
AGX = "NVIDIA Jetson AGX Orin Developer Kit"


@pytest.mark.parametrize("caps, path, reason", [
    (EncodeCapabilities(jetson_model=NANO, gst_encoder=True), EncoderPath.X264, "Orin Nano has no hardware video encoder"),
    (EncodeCapabilities(jetson_model=NANO, gst_encoder=False), EncoderPath.X264, "Orin Nano has no hardware"),
    (EncodeCapabilities(jetson_model="NVIDIA  Jetson ORIN   NANO 8GB"), EncoderPath.X264, "Orin Nano"),
    (EncodeCapabilities(jetson_model=NX, gst_encoder=True), EncoderPath.JETSON_GST, "has NVENC"),
    (EncodeCapabilities(jetson_model=AGX, gst_encoder=True), EncoderPath.JETSON_GST, "has NVENC"),
    (EncodeCapabilities(jetson_model=AGX, gst_encoder=False), EncoderPath.X264, "nvv4l2h264enc is not installed"),
    # a Jetson never takes the dGPU path, whatever the probe said
    (EncodeCapabilities(jetson_model=NX, gst_encoder=False, nvenc_problem=None), EncoderPath.X264, "nvv4l2h264enc"),
    (EncodeCapabilities(nvenc_problem=None), EncoderPath.NVENC, "the GPU has NVENC"),
    (EncodeCapabilities(nvenc_problem="PyNvVideoCodec opens no H.264 encoder (no NVENC on H100)"), EncoderPath.X264,
     "no NVENC: PyNvVideoCodec opens no H.264 encoder"),
    (EncodeCapabilities(nvenc_problem="PyNvVideoCodec is not usable (No module named 'PyNvVideoCodec')"),
     EncoderPath.X264, "no NVENC: PyNvVideoCodec is not usable"),
    (EncodeCapabilities(), EncoderPath.X264, "no NVENC"),
], ids=["nano", "nano without gst", "nano spelled loosely", "orin nx", "agx orin", "agx without gst",
        "jetson with a probe", "dgpu with nvenc", "dgpu without nvenc", "no pynvvideocodec", "nothing known"])
def test_the_encoder_follows_from_the_capabilities_alone(caps, path, reason):
    choice = choose_encoder(caps)
    assert choice.path is path
    assert reason in choice.reason
    assert choice == choose_encoder(caps)  # pure: the same answer every time


@pytest.mark.parametrize("model, nano", [(NANO, True), (NX, False), (AGX, False), ("Jetson Orin Nano", True),
                                         ("NVIDIA Jetson Xavier NX", False)])
def test_orin_nano_is_told_from_its_model_name(model, nano):
    assert is_orin_nano(model) is nano


@pytest.mark.parametrize("model_text, tegra, jetson", [
    (NANO + "\x00", False, NANO),
    (AGX, True, AGX),
    (None, True, "NVIDIA Jetson (model unknown)"),
    ("QEMU Virtual Machine", False, None),
], ids=["nano", "agx", "tegra release only", "not a jetson"])
def test_a_jetson_is_recognised_by_its_device_tree_model(tmp_path: Path, monkeypatch, model_text, tegra, jetson):
    model_file, release = tmp_path / "model", tmp_path / "nv_tegra_release"
    if model_text is not None:
        model_file.write_bytes(model_text.encode())
    if tegra:
        release.write_text("# R36 (release), REVISION: 4.3\n")
    monkeypatch.setattr("edge_app.record.encoder_choice.nvenc_problem", lambda: "probed")
    caps = detect_capabilities(model_file, release)
    assert caps.jetson_model == jetson
    assert (caps.nvenc_problem == "probed") is (jetson is None)


def test_this_machine_takes_nvenc_exactly_when_an_encoder_session_opens(tmp_path):
    # on CI (no GPU, no PyNvVideoCodec) x264, saying why; on a GPU host with NVENC, NVENC
    problem = nvenc_problem()
    choice = choose_encoder(detect_capabilities(tmp_path / "no-model", tmp_path / "no-release"))
    if problem is None:
        assert choice.path is EncoderPath.NVENC
    else:
        assert choice.path is EncoderPath.X264 and choice.reason == f"no NVENC: {problem}"
        assert problem.startswith("PyNvVideoCodec")
        assert "edge-app[nvenc]" in problem or "not usable" in problem


CAMERA = {"id": "yard", "source": "rtsp://h/s", "privacy": {"masks": [{"polygon": [[0, 0], [0.5, 0], [0.5, 0.5]]}],
                                                             "record_height": 720}}


@pytest.mark.parametrize("caps, says", [
    (EncodeCapabilities(jetson_model="NVIDIA Jetson Orin Nano Developer Kit", gst_encoder=True),
     "re-encoded with x264 on the CPU (privacy masks) at 720 px high; Jetson Orin Nano has no hardware video "
     "encoder (NVENC)"),
    (EncodeCapabilities(jetson_model="NVIDIA Jetson AGX Orin Developer Kit", gst_encoder=True),
     "re-encoded with the Jetson's NVENC (GStreamer nvv4l2h264enc) (privacy masks) at 720 px high; "
     "NVIDIA Jetson AGX Orin Developer Kit has NVENC"),
    (EncodeCapabilities(nvenc_problem=None),
     "re-encoded with NVENC (PyNvVideoCodec) (privacy masks) at 720 px high; the GPU has NVENC"),
], ids=["orin nano", "agx orin", "dgpu"])
def test_check_config_says_the_path_and_why(caps, says):
    config = parse_config({"model": {"path": "m.onnx"}, "cameras": [CAMERA, {"id": "gate", "source": "rtsp://h/t"}],
                           "record": {"continuous": {"enabled": True}}})
    assert recording_path(config, config.cameras[0], choose_encoder(caps)) == says
    assert recording_path(config, config.cameras[1], choose_encoder(caps)) == "stream copy"
