"""``python -m bench.chaos [options]``: the chaos soak of a real edge-app run (docs/chaos-soak.md);
``python -m bench.chaos disk-pressure [options]``: its disk-pressure run."""
import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["disk-pressure"]:
        from bench.chaos.disk_pressure import main as disk_pressure

        sys.exit(disk_pressure(sys.argv[2:]))
    from bench.chaos.soak import main

    sys.exit(main())
