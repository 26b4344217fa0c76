#!/usr/bin/env bash
# Installs the Debian packages the tests and the demo use: ffmpeg (to make the demo clip and feed
# RTSP), GStreamer's RTSP server with Python bindings (the real RTSP server of the tests),
# Mosquitto (the tests' own brokers), systemd (systemd-analyze checks the shipped unit),
# GStreamer's software decoders with the headers PyGObject builds against (decoder gstreamer)
# Chromium with its WebDriver (the dashboard's browser tests drive /usr/bin/chromium through
# /usr/bin/chromedriver), Node (the dashboard's scripts), PostgreSQL with its client (the fleet
# service's second database engine) and Mosquitto's clients (the commands the docs give users).
# testkit/skips.py lists every tool the tests ask for; on CI (CI set) a missing one fails.
# Installs nothing when everything is already there; then starts a throw-away PostgreSQL for the
# tests when nothing listens on 127.0.0.1:5432.
set -euo pipefail
need=()
command -v ffmpeg >/dev/null || need+=(ffmpeg)
command -v mosquitto >/dev/null || [ -x /usr/sbin/mosquitto ] || need+=(mosquitto)
command -v mosquitto_sub >/dev/null && command -v mosquitto_pub >/dev/null \
  || need+=(mosquitto-clients)  # the README's line that watches the detections; the flood tests
command -v git >/dev/null || need+=(git)  # the demo's test clones the checkout
command -v node >/dev/null || need+=(nodejs)
command -v psql >/dev/null || need+=(postgresql-client)
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || need+=(postgresql)
command -v systemd-analyze >/dev/null || need+=(systemd)
command -v openssl >/dev/null || need+=(openssl)  # throw-away TLS certificates of the tests and the rollout bench
/usr/bin/python3 -c 'import gi; gi.require_version("GstRtspServer", "1.0"); from gi.repository import GstRtspServer' 2>/dev/null \
  || need+=(python3-gi gir1.2-gst-rtsp-server-1.0 gstreamer1.0-plugins-good gstreamer1.0-plugins-bad)
# decoder gstreamer: Debian's software decoders (avdec_h264/avdec_h265 are in gstreamer1.0-libav) and
# what pip needs to build PyGObject in the venv (the 'gstreamer' extra): GObject introspection and
# cairo headers, pkg-config, a C compiler and the Python headers.
for pkg in gstreamer1.0-libav gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad \
           gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0 libgirepository1.0-dev libcairo2-dev pkg-config python3-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || need+=("$pkg")
done
command -v cc >/dev/null || need+=(gcc)
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -x /usr/bin/chromedriver ] || need+=(chromium-driver)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "missing system packages: ${need[*]}; install them with: sudo apt-get install ${need[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The fleet tests' PostgreSQL (EDGE_APP_TEST_PG, default postgresql://postgres@127.0.0.1:5432/test):
# when nothing listens there, a cluster of its own in $EDGE_APP_TEST_PG_DIR that trusts loopback,
# with the database "test". A server that already listens is left as it is.
port=5432
if ! (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  data=${EDGE_APP_TEST_PG_DIR:-/var/tmp/edge-app-test-pg}
  as_pg=()
  if [ "$(id -u)" = 0 ]; then as_pg=(runuser -u postgres --); fi  # initdb refuses to run as root
  if [ ! -f "$data/PG_VERSION" ]; then
    mkdir -p "$data"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$data"; fi
    "${as_pg[@]}" "$bin/initdb" -D "$data" -U postgres -A trust >/dev/null
  fi
  "${as_pg[@]}" "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $port -k /tmp" start >/dev/null
  "${as_pg[@]}" "$bin/psql" -h 127.0.0.1 -p $port -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 \
    || "${as_pg[@]}" "$bin/createdb" -h 127.0.0.1 -p $port -U postgres test
fi
