"""``python -m bench.track [options]``: the tracker against the reference ByteTrack (bench/README.md, "Tracking")."""
import sys

from bench.track.compare import main

if __name__ == "__main__":
    sys.exit(main())
