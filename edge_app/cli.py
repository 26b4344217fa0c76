"""The ``edge-app`` command line (docs/commands.md): run, check-config, detect, build-engine, selftest, fleet, fleet-reset.

Exit codes: 0 ok, 1 runtime failure, 2 bad usage or invalid configuration. Errors are one clear
sentence each on stderr, never a bare traceback.
"""
from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import sys
from pathlib import Path
from typing import List, Optional

from edge_app.config.file import ConfigError, load_config
from edge_app.config.redact import install_log_masking, mask_secrets
from edge_app.version import __version__


EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 too; keep its usage line
        self.print_usage(sys.stderr)
        print(f"edge-app: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="edge-app", description="Edge video analytics: cameras -> YOLO -> MQTT + REST API")
    parser.add_argument("--version", action="version", version=f"edge-app {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run the appliance until SIGINT/SIGTERM")
    run.add_argument("-c", "--config", required=True, type=Path)

    check = sub.add_parser("check-config", help="validate a configuration file")
    check.add_argument("-c", "--config", required=True, type=Path)

    detect = sub.add_parser("detect", help="run the model on images, one JSON line per image")
    detect.add_argument("--model", required=True)
    detect.add_argument("--conf", type=float, default=0.25)
    detect.add_argument("--iou", type=float, default=0.45)
    detect.add_argument("--backend", choices=["auto", "tensorrt", "onnxruntime"], default="auto")
    detect.add_argument("--input-size", type=int, default=None, help="default: read from the model")
    detect.add_argument("--max-batch", type=int, default=1)
    detect.add_argument("images", nargs="+", type=Path)

    build = sub.add_parser("build-engine", help="build (or reuse) the TensorRT engine for a configuration")
    build.add_argument("-c", "--config", required=True, type=Path)
    build.add_argument("--force", action="store_true", help="rebuild even when the cached engine matches")

    selftest = sub.add_parser("selftest", help="check this device: TensorRT, CUDA, engine build, TensorRT vs ONNX Runtime")
    selftest.add_argument("-c", "--config", type=Path, default=None)
    selftest.add_argument("--model", default=None, help="ONNX model (default: the config's model.path)")
    selftest.add_argument("images", nargs="*", type=Path)
    selftest.add_argument("--decoder", choices=("ffmpeg", "gstreamer", "nvdec"), default=None,
                          help="decoder to check with a test clip (default: what decoder auto uses)")

    fleet = sub.add_parser("fleet", help="run the fleet service (inventory, events, rollouts) until SIGINT/SIGTERM")
    fleet.add_argument("-c", "--config", required=True, type=Path)

    reset = sub.add_parser("fleet-reset", help="forget the last desired configuration version acted on (R/config/desired)")
    reset.add_argument("-c", "--config", required=True, type=Path)
    return parser


def _print_config_error(err: ConfigError) -> None:
    where = f"{err.source}: " if err.source else ""
    for problem in err.problems:
        print(mask_secrets(f"edge-app: {where}{problem}"), file=sys.stderr)


def _load(path: Path, runnable: bool = False):
    """The configuration at ``path``, or None after printing every problem.

    ``runnable`` also checks it against this machine (model file, labels, classes, certificates,
    camera files): what ``run`` would refuse is reported now, not as a crash and restart loop.
    """
    try:
        config = load_config(path)
        if runnable:
            from edge_app.config_change.checks import check_runtime

            problems = check_runtime(config)
            if problems:
                raise ConfigError(problems, str(path))
        return config
    except ConfigError as err:
        _print_config_error(err)
        return None


def _setup_logging(level: str = "INFO") -> None:
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s")
    # Camera URLs and backend messages reach the log; credentials in them must not.
    install_log_masking(logging.getLogger())


def cmd_check_config(args) -> int:
    config = _load(args.config, runnable=True)
    if config is None:
        return EXIT_USAGE
    models = ", ".join(f"{name} {model.path}" if name != "default" or len(config.model_configs()) > 1 else model.path
                       for name, model in config.model_configs().items())
    print(f"{args.config}: valid ({len(config.cameras)} camera(s), model {models})")
    from edge_app.config_change.checks import relative_paths_note

    note = relative_paths_note(config)
    if note:
        print(note)
    from edge_app.record.encoder_choice import choose_encoder, detect_capabilities
    from edge_app.record.masked_encoder import recording_path

    # the machine is looked at (an NVENC session opened and closed) only where a masked camera records
    masked = [c for c in config.cameras if c.privacy.masks and config.record_settings(c.id).any_enabled]
    choice = choose_encoder(detect_capabilities()) if masked else None
    for camera in config.cameras:
        print(f"camera {camera.id}: recording: {recording_path(config, camera, choice)}")
    if config.profiles.definitions:
        print(profiles_line(config.profiles))
    from edge_app.http_server.hosts import base_url_refused

    refused = base_url_refused(config)
    if refused:
        print(f"WARN notifications.base_url: {refused}")
    from edge_app.opencv import opencv_problem

    missing = opencv_problem()
    if missing:  # what run would refuse next, though the file itself is fine
        print(f"edge-app: edge-app run cannot start here: {missing}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def profiles_line(profiles) -> str:
    """What the schedule gives now, in words: which profile and until when (docs/profiles.md)."""
    from datetime import datetime, timezone

    from edge_app.config.profile_schedule import iso_in_zone, profile_state, schedule_zone

    zone = schedule_zone(profiles)
    state = profile_state(profiles, datetime.now(timezone.utc), zone)
    until = (f", held until {iso_in_zone(state.hold_until, zone)}" if state.hold_until else
             f", {state.next_profile or 'no profile'} from {iso_in_zone(state.next_boundary, zone)}"
             if state.next_boundary else "")
    return (f"profiles: {', '.join(profiles.names())} (time zone {zone}); "
            f"in force now: {state.active or 'none'} ({state.source}){until}")


def cmd_detect(args) -> int:
    from edge_app.config.schema import ModelConfig
    from edge_app.detect.base import DetectorError
    from edge_app.detect.factory import create_detector, load_image
    from pydantic import ValidationError

    try:
        model_cfg = ModelConfig(path=args.model, backend=args.backend, conf_threshold=args.conf, iou_threshold=args.iou,
                                input_size=args.input_size, max_batch=args.max_batch)
    except ValidationError as err:
        for item in err.errors(include_url=False):
            print(f"edge-app: {'.'.join(map(str, item['loc']))}: {item['msg']}", file=sys.stderr)
        return EXIT_USAGE
    try:
        detector = create_detector(model_cfg)
    except DetectorError as err:
        print(f"edge-app: {err}", file=sys.stderr)
        return EXIT_FAILURE
    status = EXIT_OK
    for path in args.images:
        try:
            image = load_image(path)
        except (OSError, ValueError) as err:
            print(f"edge-app: {err}", file=sys.stderr)
            status = EXIT_FAILURE
            continue
        detections = detector.detect([image])[0]
        height, width = image.shape[:2]
        print(json.dumps({"image": str(path), "width": width, "height": height, "detections": detections.to_dicts()}), flush=True)
    detector.close()
    return status


def cmd_build_engine(args) -> int:
    config = _load(args.config)
    if config is None:
        return EXIT_USAGE
    try:
        from edge_app.detect.tensorrt.commands import build_engine_command
    except ImportError:
        print("edge-app: this installation has no TensorRT backend; install TensorRT (JetPack ships it) to build engines", file=sys.stderr)
        return EXIT_FAILURE
    return build_engine_command(config, force=args.force)


def cmd_selftest(args) -> int:
    try:
        from edge_app.commands.selftest import selftest_command
    except ImportError as err:
        print(f"edge-app: selftest is not available: {err}", file=sys.stderr)
        return EXIT_FAILURE
    config = None
    if args.config is not None:
        config = _load(args.config)
        if config is None:
            return EXIT_USAGE
    if config is None and args.model is None:
        print("edge-app: selftest needs -c CONFIG or --model MODEL", file=sys.stderr)
        return EXIT_USAGE
    return selftest_command(config if args.model is None else args.model, args.images, decoder=args.decoder)


def cmd_run(args) -> int:
    from edge_app.process.shutdown import StopSignals, finish_process
    from edge_app.process.stack_dump import block_dump_signal, start_stack_dumps
    from edge_app.process.systemd import SystemdNotifier

    # Before anything can start a thread: every thread inherits the blocked stop signals, and
    # only the main thread takes them (edge_app.process.shutdown says why).
    signals = StopSignals()
    signals.install()
    block_dump_signal()
    config = _load(args.config, runnable=True)
    if config is None:
        return EXIT_USAGE
    _setup_logging(config.logging.level)
    # A native crash (SIGSEGV in a driver, SIGABRT from C++) leaves every thread's stack in the journal.
    faulthandler.enable(all_threads=True)
    start_stack_dumps()
    from edge_app.commands.run_appliance import run_appliance

    return finish_process(run_appliance(config, args.config, signals, SystemdNotifier.from_environment()))


def cmd_fleet(args) -> int:
    from edge_app.fleet_service.config import load_fleet_config
    from edge_app.fleet_service.run import run_fleet
    from edge_app.process.shutdown import StopSignals, finish_process

    signals = StopSignals()
    signals.install()
    try:
        config = load_fleet_config(args.config)
    except ConfigError as err:
        _print_config_error(err)
        return EXIT_USAGE
    _setup_logging(config.logging.level)
    return finish_process(run_fleet(config, signals))


def cmd_fleet_reset(args) -> int:
    from edge_app.fleet_agent.desired.versions import DesiredVersionStore, state_path_for

    if _load(args.config) is None:
        return EXIT_USAGE
    store = DesiredVersionStore(state_path_for(args.config))
    try:
        version = store.reset()
    except OSError as err:
        print(f"edge-app: cannot write {store.path}: {err.strerror or err}", file=sys.stderr)
        return EXIT_FAILURE
    held = "no desired configuration version was saved" if version is None else f"last version acted on: {version}"
    print(f"{store.path}: reset ({held}); a new fleet epoch starts with the next desired configuration issued "
          "from now on, and nothing issued before stays valid; restart the appliance so it acts on it")
    return EXIT_OK


COMMANDS = {"fleet": cmd_fleet, "fleet-reset": cmd_fleet_reset, "run": cmd_run, "check-config": cmd_check_config, "detect": cmd_detect, "build-engine": cmd_build_engine, "selftest": cmd_selftest}


def main(argv: Optional[List[str]] = None) -> int:
    args = _build_parser().parse_args(argv)
    if args.command not in ("run", "fleet"):
        _setup_logging("WARNING")
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
