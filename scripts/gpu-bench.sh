#!/usr/bin/env bash
# The GPU benchmark (docs/gpu-benchmark.md) in one command, on a machine with an NVIDIA GPU,
# Python 3, PyTorch with CUDA, cuda-python, numpy and OpenCV, even one that cannot reach a
# package index:
#
#   scripts/gpu-bench.sh [--wheels DIR] [--debs DIR] [--out DIR] [-- ARGS for python -m bench.gpu pipeline]
#
# --wheels DIR  installs the wheels in DIR (onnx2torch, paho-mqtt, pydantic, PyNvVideoCodec, av ... for
#               this Python) into a private folder put on PYTHONPATH, without touching the system's
#               packages; a .zip that is no wheel is unpacked there as is
# --debs DIR    unpacks the Debian packages in DIR (mosquitto, libmosquitto1, libcjson1, ...)
#               into a private folder when no mosquitto is installed
# --out DIR     where gpu.json, gpu.md and the broker's log go (default bench/results)
# Starts its own Mosquitto on a free port and stops it at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
wheels="" debs="" out="bench/results"
while [ $# -gt 0 ]; do
  case "$1" in
    --wheels) wheels="$2"; shift 2 ;;
    --debs) debs="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
python="${PYTHON:-python3}"
work="$(mktemp -d /tmp/edge-app-gpu-bench.XXXXXX)"
mkdir -p "$out"
if [ -n "$wheels" ]; then
  "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$work/site" "$wheels"/*.whl
  # a zip that is no wheel (a package folder, e.g. PyNvVideoCodec without its debug symbols) is unpacked as is
  for archive in "$wheels"/*.zip; do [ -e "$archive" ] && "$python" -m zipfile -e "$archive" "$work/site"; done
  export PYTHONPATH="$work/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

mosquitto_libs=""
mosquitto="$(command -v mosquitto || true)"
[ -z "$mosquitto" ] && [ -x /usr/sbin/mosquitto ] && mosquitto=/usr/sbin/mosquitto
if [ -z "$mosquitto" ] && [ -n "$debs" ]; then
  for deb in "$debs"/*.deb; do dpkg -x "$deb" "$work/root"; done
  mosquitto="$work/root/usr/sbin/mosquitto"
  # for mosquitto alone: the private libraries must not shadow the ones Python loads
  mosquitto_libs="$work/root/usr/lib/x86_64-linux-gnu:$work/root/lib/x86_64-linux-gnu"
fi
[ -n "$mosquitto" ] || { echo "no mosquitto: install it or pass --debs" >&2; exit 1; }
port="$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
# as root mosquitto would drop to a "mosquitto" user that a bare machine lacks
printf 'listener %s 127.0.0.1\nallow_anonymous true\nmax_queued_messages 100000\nuser %s\n' "$port" "$(id -un)" > "$work/mosquitto.conf"
LD_LIBRARY_PATH="${mosquitto_libs:-${LD_LIBRARY_PATH:-}}" "$mosquitto" -c "$work/mosquitto.conf" > "$out/mosquitto.log" 2>&1 &
broker=$!
trap 'kill "$broker" 2>/dev/null || true; wait "$broker" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 50); do
  "$python" -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
  sleep 0.1
done
"$python" -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null \
  || { echo "mosquitto did not start:" >&2; cat "$out/mosquitto.log" >&2; exit 1; }
echo "mosquitto $(LD_LIBRARY_PATH="${mosquitto_libs:-${LD_LIBRARY_PATH:-}}" "$mosquitto" -h 2>/dev/null | head -1 | awk '{print $3}') on 127.0.0.1:$port"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
PYTHONUNBUFFERED=1 "$python" -m bench.gpu pipeline --mqtt-port "$port" --json "$out/gpu.json" --markdown "$out/gpu.md" "$@"
