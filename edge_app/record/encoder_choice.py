"""Which encoder re-encodes a masked camera's recording: a pure rule over what the device has.

``detect_capabilities`` looks at the machine once (the Jetson model, GStreamer's
``nvv4l2h264enc``, an NVENC session opened through PyNvVideoCodec); ``choose_encoder`` turns what
it found into a path and the reason for it, with no look at the machine of its own, so that every
combination is a unit test. The rule, in one place:

- a Jetson Orin Nano has no hardware video encoder at all: x264 on the CPU;
- any other Jetson (Orin NX, AGX Orin) encodes with ``nvv4l2h264enc`` through GStreamer, where
  the plugin is installed (JetPack ships it); without it, x264;
- a discrete GPU encodes with NVENC through PyNvVideoCodec where an encoder session opens (the
  data-centre GPUs without NVENC, A100 and H100, refuse it); else x264.
"""
from __future__ import annotations

import enum
import logging
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

log = logging.getLogger(__name__)

JETSON_MODEL = Path("/proc/device-tree/model")
TEGRA_RELEASE = Path("/etc/nv_tegra_release")
GST_ELEMENT = "nvv4l2h264enc"
#: the most read of the model file (a line)
MAX_MODEL_BYTES = 256
GST_INSPECT_TIMEOUT_S = 10.0
INSTALL_HINT = "pip install 'edge-app[nvenc]' on a host whose GPU has NVENC"


class EncoderPath(str, enum.Enum):
    X264 = "x264"
    NVENC = "nvenc"
    JETSON_GST = "nvv4l2h264enc"


#: what ``check-config`` and the status say of each path
PATH_WORDS = {
    EncoderPath.X264: "x264 on the CPU",
    EncoderPath.NVENC: "NVENC (PyNvVideoCodec)",
    EncoderPath.JETSON_GST: "the Jetson's NVENC (GStreamer nvv4l2h264enc)",
}


@dataclass(frozen=True)
class EncodeCapabilities:
    """What the device offers for encoding H.264, as found by ``detect_capabilities``."""

    jetson_model: Optional[str] = None  # "NVIDIA Jetson Orin Nano Developer Kit"; None: not a Jetson
    gst_encoder: bool = False  # GStreamer's nvv4l2h264enc element is installed
    nvenc_problem: Optional[str] = "not probed"  # None: an NVENC session opened through PyNvVideoCodec


@dataclass(frozen=True)
class EncoderChoice:
    path: EncoderPath
    reason: str

    @property
    def words(self) -> str:
        return PATH_WORDS[self.path]


def is_orin_nano(model: str) -> bool:
    return "orin nano" in " ".join(model.lower().split())


def choose_encoder(caps: EncodeCapabilities) -> EncoderChoice:
    """The encoder for masked recordings on a device with ``caps`` (pure: the rule above)."""
    if caps.jetson_model is not None:
        if is_orin_nano(caps.jetson_model):
            return EncoderChoice(EncoderPath.X264, "Jetson Orin Nano has no hardware video encoder (NVENC)")
        if caps.gst_encoder:
            return EncoderChoice(EncoderPath.JETSON_GST, f"{caps.jetson_model.strip()} has NVENC")
        return EncoderChoice(EncoderPath.X264, f"GStreamer's {GST_ELEMENT} is not installed")
    if caps.nvenc_problem is None:
        return EncoderChoice(EncoderPath.NVENC, "the GPU has NVENC")
    return EncoderChoice(EncoderPath.X264, f"no NVENC: {caps.nvenc_problem}")


# ---- looking at the machine ------------------------------------------------------------------


def _jetson_model(model_file: Path, tegra_release: Path) -> Optional[str]:
    try:
        with open(model_file, "rb") as handle:
            model = handle.read(MAX_MODEL_BYTES).decode("utf-8", "replace").strip("\x00 \n")
    except OSError:
        model = ""
    if "jetson" in model.lower() or "orin" in model.lower():
        return model
    return "NVIDIA Jetson (model unknown)" if tegra_release.exists() else None


def _gst_has_encoder() -> bool:
    inspect = shutil.which("gst-inspect-1.0")
    if inspect is None:
        return False
    try:
        done = subprocess.run([inspect, GST_ELEMENT], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=GST_INSPECT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def nvenc_problem() -> Optional[str]:
    """None when PyNvVideoCodec opens an H.264 encoder session on GPU 0, else why it does not."""
    try:
        import PyNvVideoCodec as nvc
    except ModuleNotFoundError as err:
        if err.name == "PyNvVideoCodec":
            return f"PyNvVideoCodec is not installed ({INSTALL_HINT})"
        return f"PyNvVideoCodec is not usable ({err})"
    except Exception as err:  # its own check of the driver at import
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        return f"PyNvVideoCodec is not usable ({first})"
    try:
        encoder = nvc.CreateEncoder(256, 256, "NV12", True, codec="h264", bf="0")
        del encoder
    except Exception as err:  # noqa: BLE001 - no NVENC on this GPU, no free session, an old driver
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        return f"PyNvVideoCodec opens no H.264 encoder ({first})"
    return None


def detect_capabilities(model_file: Path = JETSON_MODEL, tegra_release: Path = TEGRA_RELEASE) -> EncodeCapabilities:
    """What this machine offers (opens and closes an NVENC session on a discrete GPU)."""
    jetson = _jetson_model(model_file, tegra_release)
    if jetson is not None:
        return EncodeCapabilities(jetson_model=jetson, gst_encoder=_gst_has_encoder(), nvenc_problem="a Jetson")
    return EncodeCapabilities(nvenc_problem=nvenc_problem())


__all__ = ["EncodeCapabilities", "EncoderChoice", "EncoderPath", "choose_encoder", "detect_capabilities",
           "is_orin_nano", "nvenc_problem"]
