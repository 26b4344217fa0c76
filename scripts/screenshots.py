#!/usr/bin/env python3
"""Refreshes the dashboard pictures in docs/screenshots/ (shown in docs/dashboard.md).

Besides the pictures of single views, each section of the page is pictured at desktop size and
at a phone's 390x844: section-<live|review|recordings|zones|settings|device>-<desktop|phone>.png,
with live-grid.png (every camera at once) and review.png (a review item with its snapshots).

The browser tests take them while they drive the dashboard against a real appliance (see
tests/browser), so the pictures show what the tests have just checked. Run it after changing
the page, with the test environment set up (scripts/test.sh does that):

    .venv/bin/python scripts/screenshots.py [folder]
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv: list) -> int:
    folder = Path(argv[1]).resolve() if len(argv) > 1 else REPO / "docs" / "screenshots"
    env = dict(os.environ, EDGE_APP_SCREENSHOTS=str(folder))
    # -p no:cacheprovider: a refresh leaves no pytest cache behind in the tree.
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/browser"],
                          cwd=REPO, env=env)
    if done.returncode == 0:
        print(f"screenshots written to {folder}: {', '.join(sorted(p.name for p in folder.glob('*.png')))}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
