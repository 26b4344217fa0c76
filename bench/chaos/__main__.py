"""``python -m bench.chaos [options]``: the chaos soak of a real edge-app run (docs/chaos-soak.md)."""
import sys

from bench.chaos.soak import main

if __name__ == "__main__":
    sys.exit(main())
