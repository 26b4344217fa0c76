#!/usr/bin/env bash
# Runs tests/gpu on a machine with an NVIDIA GPU (they skip elsewhere), without the suite-wide
# fixtures (brokers, RTSP server), so a CUDA image with numpy, OpenCV and cuda-python suffices.
#
#   EDGE_APP_WHEELS=dir        wheels (or zips of them) to unpack onto PYTHONPATH first, for a
#                              machine without a package registry (PyNvVideoCodec, av, pydantic)
#   EDGE_APP_NVDEC_MEDIA=dir   clip1080.mp4 and clip1080.ts, where ffmpeg is missing
#   EDGE_APP_SHARED=dir        the shared test data (images/bus.jpg)
#   EDGE_APP_GPU_RESULTS=file  measurements as JSON
# Extra arguments go to pytest, e.g. scripts/gpu-check.sh -k nvdec
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -n "${EDGE_APP_WHEELS:-}" ]]; then
    site="$(mktemp -d)"
    for wheel in "$EDGE_APP_WHEELS"/*; do
        python3 -m zipfile -e "$wheel" "$site"
    done
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}"
exec python3 -m pytest -p no:cacheprovider --confcutdir=tests/gpu -q -rs tests/gpu "$@"
