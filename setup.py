"""Packaging for edge-app.

OpenCV is an extra on purpose: on a Jetson, JetPack's system OpenCV is built with GStreamer
(needed for ``csi://`` and ``gst:`` sources) and a PyPI wheel installed beside it would shadow
it. Everywhere else, install ``edge-app[opencv]``.
"""
from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).parent
VERSION = {}
exec((ROOT / "edge_app" / "version.py").read_text(), VERSION)

setup(
    name="edge-app",
    version=VERSION["__version__"],
    description="Edge video analytics appliance: cameras -> YOLO (TensorRT / ONNX Runtime) -> MQTT + REST",
    long_description=(ROOT / "README.md").read_text(encoding="utf-8") if (ROOT / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.8",
    packages=find_packages(include=["edge_app", "edge_app.*"]),
    package_data={"edge_app": ["api/static/*", "http_server/shared_static/*", "detect/coco80.txt", "fleet_service/static/*"]},
    install_requires=[
        "numpy>=1.21",
        "pydantic>=2.5,<3",
        "PyYAML>=6.0",
        "paho-mqtt>=2.0,<3",
        "Flask>=2.3",
        "cheroot>=10.0",
        "prometheus-client>=0.17",
        "onnxruntime>=1.15",
        "filelock>=3.12",
        "lap>=0.5.12",
        # imported by edge_app directly, not only through Flask and pydantic
        "Werkzeug>=2.3",
        "typing_extensions>=4.6",
        # recording (MP4 muxing, clip reading) is a core feature; PyAV has x86-64 and aarch64 wheels,
        # the last for Python 3.8 (JetPack 5.1) being 12.x
        "av>=14; python_version>='3.9'",
        "av>=12; python_version<'3.9'",
    ],
    extras_require={
        "opencv": ["opencv-python-headless>=4.8"],
        # TensorRT and its CUDA bindings come with JetPack (apt); these pins are for x86 dGPU hosts.
        "tensorrt": ["cuda-python>=12"],
        "pycuda": ["pycuda>=2022.1"],
        # decoder gstreamer off a Jetson (JetPack ships python3-gi). PyGObject 3.51+ needs
        # girepository-2.0 (GLib 2.80), newer than Debian 12 and Ubuntu 22.04 have.
        "gstreamer": ["PyGObject>=3.42,<3.51"],
        "bench": ["ultralytics", "psutil>=5.9"],
        "dev": ["pytest>=7.4", "pytest-timeout>=2.2", "requests>=2.31", "psutil>=5.9", "onnx>=1.14", "motmetrics>=1.4",
                "schemathesis>=4.0,<5", "selenium>=4.11", "psycopg[binary]>=3.1"],
        # decoder: nvdec on dGPU hosts: NVDEC through PyNvVideoCodec, network streams demuxed by
        # PyAV (an install requirement), frame buffers through the CUDA layer (cuda-python)
        "nvdec": ["PyNvVideoCodec>=2.0", "cuda-python>=12"],
        # privacy-masked recordings encoded by NVENC on dGPU hosts (docs/privacy.md); x264 without it
        "nvenc": ["PyNvVideoCodec>=2.0"],
        # The fleet service on PostgreSQL (SQLite needs nothing beyond the standard library).
        "fleet": ["psycopg[binary]>=3.1"],
        # Device health of discrete GPUs (temperature, throttling, power, NVENC/NVDEC load) through NVML.
        "nvml": ["nvidia-ml-py>=12.535"],
    },
    entry_points={"console_scripts": ["edge-app=edge_app.cli:main"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "Operating System :: POSIX :: Linux",
        "Topic :: Multimedia :: Video :: Capture",
        "Topic :: Scientific/Engineering :: Image Recognition",
    ],
)
