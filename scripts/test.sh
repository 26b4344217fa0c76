#!/usr/bin/env bash
# Sets up everything the test suite needs and runs it: ./scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/system-deps.sh
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[opencv,dev,gstreamer]'
exec .venv/bin/python -m pytest "$@"
