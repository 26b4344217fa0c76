"""A benchmark run on a copy of the tree (no .git, or a stale one) records the commit it was made from."""
from bench.common import provenance


def test_the_named_commit_stands_in_where_git_finds_none(monkeypatch):
    monkeypatch.setattr(provenance, "_git", lambda *args: None)
    monkeypatch.setenv(provenance.COMMIT_ENV, "1f14d37")
    found = provenance.collect("onnxruntime", argv=["run"])
    assert (found.commit, found.dirty) == ("1f14d37", False)


def test_the_named_commit_wins_over_a_stale_git(monkeypatch):
    """A copied tree can carry an old .git: the commit its sender names is the one measured."""
    monkeypatch.setattr(provenance, "_git", lambda *args: "abc" if args[0] == "rev-parse" else " M x.py")
    monkeypatch.setenv(provenance.COMMIT_ENV, "1f14d37")
    found = provenance.collect("onnxruntime", argv=["run"])
    assert (found.commit, found.dirty) == ("1f14d37", False)


def test_without_a_named_commit_git_says(monkeypatch):
    monkeypatch.setattr(provenance, "_git", lambda *args: "abc" if args[0] == "rev-parse" else "")
    monkeypatch.delenv(provenance.COMMIT_ENV, raising=False)
    found = provenance.collect("onnxruntime", argv=["run"])
    assert (found.commit, found.dirty) == ("abc", False)
