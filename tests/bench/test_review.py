"""``python -m bench.review`` runs (on few events: the figures of docs/review.md come from 100,000)."""
import json

from bench.review.query_cost import main


def test_the_review_bench_runs_every_query(capsys, tmp_path):
    assert main(["--events", "400", "--rounds", "1", "--json", str(tmp_path / "review.json")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["events"] == 400 and printed["items"] > 0 and len(printed["queries"]) == 7
    assert "provenance" in json.loads((tmp_path / "review.json").read_text())
