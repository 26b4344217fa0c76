"""``python -m bench.review [--events N] [--json PATH]``: review query times on N stored events."""
import sys

from bench.review.query_cost import main

if __name__ == "__main__":
    sys.exit(main())
