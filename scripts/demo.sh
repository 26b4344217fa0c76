#!/usr/bin/env bash
# Sets up and runs the demo: ./scripts/demo.sh
# Needs no camera and no GPU: it loops a clip made from the sample images and runs YOLOv8n on
# the CPU. Detections go to the MQTT broker on 127.0.0.1:1883 (if one runs); the dashboard is
# on http://127.0.0.1:8080/.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${EDGE_APP_SHARED:-../shared}
command -v ffmpeg >/dev/null || { [ "$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg >/dev/null; } \
  || { echo "ffmpeg is needed to make the demo clip: sudo apt-get install ffmpeg" >&2; exit 1; }
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[opencv]'
mkdir -p demo engines
if [ ! -f engines/yolov8n_coco_dynbatch.onnx ]; then
  if [ -f "$SHARED/models/yolov8n_coco_dynbatch.onnx" ]; then
    cp "$SHARED/models/yolov8n_coco_dynbatch.onnx" engines/
  else
    echo "No model: export one with Ultralytics (yolo export model=yolov8n.pt format=onnx dynamic=True)" >&2
    echo "and copy it to engines/yolov8n_coco_dynbatch.onnx" >&2
    exit 1
  fi
fi
if [ ! -f demo/demo.mp4 ]; then
  .venv/bin/python -m edge_app.demo_clip --images "$SHARED/images" --out demo/demo.mp4
fi
exec .venv/bin/edge-app run -c configs/demo.yaml
