#!/usr/bin/env bash
# Sets up and runs the demo: ./scripts/demo.sh
# Needs no camera and no GPU: it loops a clip made from the sample images and runs YOLOv8n on
# the CPU. Detections go to the MQTT broker on 127.0.0.1:1883 (a private Mosquitto is started
# when none listens there and mosquitto is installed); the dashboard is on http://127.0.0.1:8080/,
# on loopback only, so it needs no API token. EDGE_APP_DEMO_PORT and EDGE_APP_DEMO_MQTT_PORT
# choose other ports (they are written into the demo's config.yaml and kept).
#
# The sample model and images come from the folder beside the checkout, ../shared
# (models/yolov8n_coco_dynbatch.onnx and images/); EDGE_APP_SHARED points elsewhere. The demo's
# files (clip, model, configuration, events, recordings) live in $XDG_STATE_HOME/edge-app-demo
# (~/.local/state/edge-app-demo), outside the checkout; EDGE_APP_DEMO_STATE points elsewhere.
# Delete that folder to start over.
#
# Ctrl-C or SIGTERM to this script stops the appliance within 5 s, and then the private broker:
# the script becomes the appliance (exec).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
SHARED=${EDGE_APP_SHARED:-../shared}
STATE=${EDGE_APP_DEMO_STATE:-${XDG_STATE_HOME:-$HOME/.local/state}/edge-app-demo}
MODEL=yolov8n_coco_dynbatch.onnx

command -v ffmpeg >/dev/null || { [ "$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg >/dev/null; } \
  || { echo "ffmpeg is needed to make the demo clip: sudo apt-get install ffmpeg" >&2; exit 1; }
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[opencv]'
mkdir -p "$STATE/engines"

if [ ! -f "$STATE/engines/$MODEL" ]; then
  if [ -f "engines/$MODEL" ]; then
    cp "engines/$MODEL" "$STATE/engines/"
  elif [ -f "$SHARED/models/$MODEL" ]; then
    cp "$SHARED/models/$MODEL" "$STATE/engines/"
  else
    echo "No model: $SHARED/models/$MODEL does not exist. The sample models and images live in the" >&2
    echo "folder beside the checkout (../shared, or set EDGE_APP_SHARED). Or export one with Ultralytics" >&2
    echo "(yolo export model=yolov8n.pt format=onnx dynamic=True) and copy it to engines/$MODEL;" >&2
    echo "docs/demo.md, \"The sample model and images\", says how to make the folder and use your own model" >&2
    exit 1
  fi
fi
if [ ! -f "$STATE/demo.mp4" ]; then
  .venv/bin/python -m edge_app.commands.demo_clip --images "$SHARED/images" --out "$STATE/demo.mp4"
fi
# A copy, so that changes made through the dashboard are saved there and not in the checkout.
read -r API_HOST API_PORT MQTT_HOST MQTT_PORT < <(.venv/bin/python -m edge_app.commands.demo_config \
  --template configs/demo.yaml --config "$STATE/config.yaml" \
  ${EDGE_APP_DEMO_PORT:+--api-port "$EDGE_APP_DEMO_PORT"} ${EDGE_APP_DEMO_MQTT_PORT:+--mqtt-port "$EDGE_APP_DEMO_MQTT_PORT"}) \
  || { echo "demo: could not prepare $STATE/config.yaml (above)" >&2; exit 1; }

listening() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
if listening "$API_HOST" "$API_PORT"; then
  echo "demo: port $API_PORT on $API_HOST is taken (another program, or a demo still running: stop it with Ctrl-C)." >&2
  echo "demo: run the demo on another port: EDGE_APP_DEMO_PORT=$((API_PORT + 1)) ./scripts/demo.sh" >&2
  exit 1
fi
BROKER=
if ! listening "$MQTT_HOST" "$MQTT_PORT"; then
  MOSQUITTO=$(command -v mosquitto || ls /usr/sbin/mosquitto 2>/dev/null || true)
  if [ -n "$MOSQUITTO" ] && [ "$MQTT_HOST" = 127.0.0.1 ]; then
    printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n' "$MQTT_PORT" >"$STATE/mosquitto.conf"
    "$MOSQUITTO" -c "$STATE/mosquitto.conf" >"$STATE/mosquitto.log" 2>&1 &
    BROKER=$!
    trap 'kill "$BROKER" 2>/dev/null || true' EXIT
    echo "demo: started a private Mosquitto on 127.0.0.1:$MQTT_PORT (log: $STATE/mosquitto.log)"
  else
    echo "demo: no MQTT broker on $MQTT_HOST:$MQTT_PORT and mosquitto is not installed (sudo apt-get install mosquitto);" \
         "the appliance runs and keeps retrying" >&2
  fi
fi

echo "demo: files in $STATE (config.yaml there is the demo's configuration)"
echo "demo: dashboard on http://$API_HOST:$API_PORT/ (loopback only: no API token needed); MQTT on $MQTT_HOST:$MQTT_PORT"
cd "$STATE"
if [ -n "$BROKER" ]; then
  # The script becomes the appliance (exec below), so a signal to it reaches the appliance once and
  # directly; this watcher stops the private broker once the appliance, this same PID, has ended.
  ( trap '' INT TERM HUP; while kill -0 "$$" 2>/dev/null; do sleep 0.5; done; kill "$BROKER" 2>/dev/null ) \
    </dev/null >/dev/null 2>&1 &
fi
exec "$REPO/.venv/bin/edge-app" run -c config.yaml
