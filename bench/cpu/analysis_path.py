"""The analysis path of one camera (tracking, zones and lines, events) in µs per frame, against other commits in one run.

    python -m bench.cpu analysis-path [--objects 5 10 50 200] [--areas one three] [--frames 300]
                                      [--repeats 5] [--rounds 2] [--against COMMIT ...] [--json OUT]

No model and no camera: a synthetic scene of walkers (``bench/cpu/analysis_path_worker.py``:
about N tracked objects in view, arriving and leaving, some missed for a frame, a few low-score
boxes) goes through ``ZoneTracker`` and ``LineCounter`` alone (``areas_us``: update, forget the
ended tracks, occupants) and through the whole ``CameraAnalysis.process`` (``analysis_us``, with
its stages as ``edge_app_stage_seconds`` counts them). ``--areas one`` is the zone and line of
each camera of ``bench.cpu cameras``; ``three`` is three zones and three lines, two with label
filters.

Each tree runs in its own process: this checkout, and the ``edge_app`` of every ``--against``
commit unpacked into a temporary directory (``git archive``). The trees take turns, in reverse
order every other round, so a load that drifts on a shared machine weighs on all of them; each
figure is the best of ``--repeats`` passes over the scene, the best over the rounds kept.
Ratios are each ``--against`` commit's time over this checkout's (above 1: this checkout is faster).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from bench.common.provenance import NO_MODEL, collect, write_results
from testkit.paths import REPO

log = logging.getLogger(__name__)

WORKER = Path(__file__).with_name("analysis_path_worker.py")
HERE = "this checkout"
WORKER_TIMEOUT_S = 600.0


def unpack(commit: str, into: Path) -> Path:
    """``edge_app`` as it is at ``commit``, under ``into``/``commit``."""
    tree = into / commit
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "edge_app"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def measure(tree: Path, spec: Dict[str, Any]) -> Dict[str, Any]:
    done = subprocess.run([sys.executable, str(WORKER), json.dumps(spec)], cwd=str(tree), capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}, timeout=WORKER_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"the worker failed in {tree}: {done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    if not Path(result["edge_app"]).resolve().is_relative_to(tree.resolve()):
        raise RuntimeError(f"the worker imported {result['edge_app']}, not the tree {tree}")
    return result


def _best(old: Optional[Dict[str, Any]], new: Dict[str, Any]) -> Dict[str, Any]:
    if old is None:
        return new
    out = dict(old)
    out["areas_us"] = min(old["areas_us"], new["areas_us"])
    if new["analysis_us"]["total"] < old["analysis_us"]["total"]:
        out["analysis_us"] = new["analysis_us"]
    return out


def run(objects: Sequence[int], areas: Sequence[str], frames: int, repeats: int, rounds: int,
        against: Sequence[str]) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="analysis-path-") as temp:
        trees: List[Tuple[str, Path]] = [(HERE, REPO)] + [(commit, unpack(commit, Path(temp))) for commit in against]
        cases: List[Dict[str, Any]] = []
        for area in areas:
            for count in objects:
                spec = {"objects": count, "areas": area, "frames": frames, "repeats": repeats}
                best: Dict[str, Dict[str, Any]] = {}
                for index in range(rounds):
                    for name, tree in (trees if index % 2 == 0 else trees[::-1]):
                        best[name] = _best(best.get(name), measure(tree, spec))
                        log.info("%s objects %d areas %s: %s", name, count, area, best[name])
                cases.append({"objects": count, "areas": area, "trees": {name: _figures(r) for name, r in best.items()},
                              "ratios": _ratios(best, against)})
    return {"status": "ok", "frames": frames, "repeats": repeats, "rounds": rounds,
            "against": list(against), "cases": cases}


def _figures(result: Dict[str, Any]) -> Dict[str, Any]:
    return {"tracked_per_frame": result["tracked_per_frame"], "areas_us": result["areas_us"],
            "analysis_us": result["analysis_us"]}


def _ratios(best: Dict[str, Dict[str, Any]], against: Sequence[str]) -> Dict[str, Dict[str, Optional[float]]]:
    """Per other commit: its time over this checkout's (above 1: this checkout is faster)."""
    here = best[HERE]
    out = {}
    for commit in against:
        other = best[commit]
        out[commit] = {"areas": round(other["areas_us"] / here["areas_us"], 2) if here["areas_us"] else None,
                       "analysis": round(other["analysis_us"]["total"] / here["analysis_us"]["total"], 2)
                       if here["analysis_us"]["total"] else None}
    return out


def markdown(result: Dict[str, Any]) -> str:
    against = result["against"]
    head = "| areas | objects | zones and lines µs: " + " / ".join([HERE] + [c[:10] for c in against]) + \
           " | analysis µs: " + " / ".join([HERE] + [c[:10] for c in against]) + " |"
    lines = [head, "|---|---|---|---|"]
    for case in result["cases"]:
        trees = case["trees"]
        names = [HERE] + against
        lines.append(f"| {case['areas']} | {case['objects']} | " + " / ".join(str(trees[n]["areas_us"]) for n in names)
                     + " | " + " / ".join(str(trees[n]["analysis_us"]["total"]) for n in names) + " |")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu analysis-path", description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, nargs="+", default=[5, 10, 50, 200])
    parser.add_argument("--areas", nargs="+", choices=("one", "three"), default=["one", "three"])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--against", nargs="*", default=[], help="commits to measure in the same run")
    parser.add_argument("--json", type=Path, help="where to write the results (default bench/results/analysis-path.json)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    provenance = collect(NO_MODEL)
    result = run(args.objects, args.areas, args.frames, args.repeats, args.rounds, args.against)
    out = args.json or REPO / "bench" / "results" / "analysis-path.json"
    write_results(out, {**result, "table_markdown": markdown(result)}, provenance)
    print(markdown(result))
    return 0
