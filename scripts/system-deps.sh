#!/usr/bin/env bash
# Installs the Debian packages the tests and the demo use: ffmpeg (to make the demo clip and feed
# RTSP), GStreamer's RTSP server with Python bindings (the real RTSP server of the tests),
# Mosquitto (the tests' own brokers), systemd (systemd-analyze checks the shipped unit),
# GStreamer's software decoders with the headers PyGObject builds against (decoder gstreamer)
# and Chromium with its WebDriver (the dashboard's browser tests drive /usr/bin/chromium through
# /usr/bin/chromedriver).
# Does nothing when everything is already there.
set -euo pipefail
need=()
command -v ffmpeg >/dev/null || need+=(ffmpeg)
command -v mosquitto >/dev/null || [ -x /usr/sbin/mosquitto ] || need+=(mosquitto)
command -v mosquitto_sub >/dev/null || need+=(mosquitto-clients)  # the README's line that watches the detections
command -v git >/dev/null || need+=(git)  # the demo's test clones the checkout
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
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "missing system packages: ${need[*]}; install them with: sudo apt-get install ${need[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${need[@]}" >/dev/null
