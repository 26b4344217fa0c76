"""What one GPU benchmark run (``bench.gpu pipeline``) measures and where it finds its inputs."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple, Union

from bench.common.settings import results_dir
from testkit.paths import shared_dir



@dataclass(frozen=True)
class DecodePath:
    """The settings behind one benchmark decoder name."""

    decoder: str  # cameras[].decoder
    nvdec_processes: bool = True  # capture.nvdec_processes
    engine_process: Union[bool, str] = False  # model.engine_process: true, false or "auto"
    #: launches and asynchronous copies keep Python's lock (edge_app.cuda.gil_held_calls); False
    #: makes the appliance's process call them through cuda-python, which lets go
    gil_held_calls: bool = True


#: the decode paths compared: NVDEC (frames stay on the GPU) and FFmpeg on the CPU through OpenCV;
#: "+engine" runs the model in a process of its own
DECODER_SETTINGS = {
    "nvdec": DecodePath("nvdec"),
    "ffmpeg": DecodePath("ffmpeg"),
    "nvdec-threads": DecodePath("nvdec", nvdec_processes=False),
    "nvdec+engine": DecodePath("nvdec", engine_process=True),
    "ffmpeg+engine": DecodePath("ffmpeg", engine_process=True),
    "nvdec-threads+engine": DecodePath("nvdec", nvdec_processes=False, engine_process=True),
    "nvdec+engine-releasing": DecodePath("nvdec", engine_process=True, gil_held_calls=False),
    "nvdec-releasing": DecodePath("nvdec", gil_held_calls=False),
    # what a dGPU host runs without settings: NVDEC decoder processes, engine_process auto (on
    # where NVIDIA MPS answers, edge_app.cuda.engine_process_choice)
    "default": DecodePath("nvdec", engine_process="auto"),
}
DECODERS = tuple(DECODER_SETTINGS)
#: the decoders measured unless --decoders says otherwise
DEFAULT_DECODERS = ("nvdec", "ffmpeg")
#: where the cameras' H.264 comes from: the clip file read as fast as possible, or an RTSP server
TRANSPORTS = ("file", "rtsp")


@dataclass
class GpuBenchSettings:
    """Every knob of a run. ``window_s`` is the measuring time of each configuration, split over
    ``rounds`` rounds (forward, then reversed order)."""

    model_path: Path = field(default_factory=lambda: shared_dir() / "models" / "yolov8n_coco_dynbatch.onnx")
    images_dir: Path = field(default_factory=lambda: shared_dir() / "images")
    work_dir: Path = field(default_factory=results_dir)
    #: a ready clip (1080p30 H.264); None makes the camera-like scene (bench.cpu.camera_scene)
    clip_path: Optional[Path] = None
    #: tracking and events on (the appliance's defaults), and a zone and a line per camera
    tracking: bool = True
    counting: bool = True
    #: tracking.processes of the appliance: "auto" (its default) or a count (0: trackers in its process)
    tracker_processes: Union[str, int] = "auto"
    lanes: Optional[int] = None  # None: the appliance's own rule (edge_app.pipeline.runner.default_lanes)
    window_s: float = 8.0
    rounds: int = 2
    warmup_s: float = 2.0
    #: how long a configuration may take to deliver its first frames before it counts as failed
    start_timeout_s: float = 45.0
    raw_batches: List[int] = field(default_factory=lambda: [1, 4, 8])
    cameras: List[int] = field(default_factory=lambda: [1, 4, 8])
    decoders: List[str] = field(default_factory=lambda: list(DEFAULT_DECODERS))
    transports: List[str] = field(default_factory=lambda: list(TRANSPORTS))
    batch_timeout_ms: float = 5.0
    clip_size_wh: Tuple[int, int] = (1920, 1080)
    clip_fps: int = 30
    clip_seconds_per_image: float = 5.0
    mqtt_host: str = "127.0.0.1"
    mqtt_port: int = 1883
    mqtt_qos: int = 1  # mqtt.qos of the appliance (the subscriber takes QoS 0)
    #: RTSP server port; 0 picks a free one
    rtsp_port: int = 0
    use_cuda_graphs: bool = True

    def batch_for_cameras(self, cameras: int) -> int:
        """One camera per batch slot: the raw engine at this batch is the ratio's reference."""
        return max(1, cameras)
