import sys

from edge_app.cli import main

if __name__ == "__main__":
    sys.exit(main())
