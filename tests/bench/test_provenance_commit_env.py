"""A benchmark run on a copy of the tree without its .git still records the commit it was made from."""
from bench.common import provenance


def test_the_named_commit_stands_in_where_git_finds_none(monkeypatch):
    monkeypatch.setattr(provenance, "_git", lambda *args: None)
    monkeypatch.setenv(provenance.COMMIT_ENV, "1f14d37")
    found = provenance.collect("onnxruntime", argv=["run"])
    assert found.commit == "1f14d37"
    assert found.dirty is None


def test_git_wins_over_the_named_commit(monkeypatch):
    monkeypatch.setattr(provenance, "_git", lambda *args: "abc" if args[0] == "rev-parse" else "")
    monkeypatch.setenv(provenance.COMMIT_ENV, "1f14d37")
    found = provenance.collect("onnxruntime", argv=["run"])
    assert (found.commit, found.dirty) == ("abc", False)
