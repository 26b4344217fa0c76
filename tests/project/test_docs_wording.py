"""What docs and bench say must hold up for a reader who has only the repository: no goal stated
as a reference to a tracker entry the reader cannot look up, and no fixture called recorded that
was written by hand."""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Iterator, List

import pytest

REPO = Path(__file__).resolve().parents[2]
TREES = REPO / "tests" / "health" / "trees"
TEXT_SUFFIXES = {".md", ".py", ".json", ".txt", ".sh", ".yaml", ".yml", ".html", ".js"}

#: "issue 25", "Issue #4", "issues 24 and 25"; "the issue's goals", "for this issue"
ISSUE_REFERENCE = re.compile(r"\bissues?\s*#?\d+|\bissue's\b|\b(?:this|the|that) issue\b", re.IGNORECASE)
#: "recorded tree", "recorded Orin NX tree", "recorded sysfs/procfs trees", "trees ... are recorded"
RECORDED_TREE = re.compile(r"\brecorded(?:\s+[\w/.-]+){0,4}?\s+trees?\b|\btrees?\b[^.\n]{0,60}\b(?:are|were|is|was)\s+recorded\b",
                           re.IGNORECASE)
CAPTURE_FIELDS = ("device:", "jetpack:", "command:")


def text_files(*roots: Path) -> Iterator[Path]:
    for root in roots:
        if root.is_file():
            yield root
        else:
            yield from (p for p in sorted(root.rglob("*")) if p.is_file() and p.suffix in TEXT_SUFFIXES)


def issue_references(text: str) -> List[str]:
    return [m.group(0) for m in ISSUE_REFERENCE.finditer(text)]


def recorded_tree_claims(text: str) -> List[str]:
    return [m.group(0) for m in RECORDED_TREE.finditer(text)]


def recorded_trees() -> List[Path]:
    """Tree folders captured from a device: a CAPTURE.md that names the device, JetPack and command."""
    found = []
    for folder in sorted(p for p in TREES.iterdir() if p.is_dir()):
        capture = folder / "CAPTURE.md"
        if capture.is_file():
            text = capture.read_text().lower()
            missing = [f for f in CAPTURE_FIELDS if f not in text]
            assert not missing, f"{capture.relative_to(REPO)} does not state {missing}"
            found.append(folder)
    return found


READERS_TEXT = list(text_files(REPO / "README.md", REPO / "docs", REPO / "bench"))


@pytest.mark.parametrize("path", READERS_TEXT, ids=[str(p.relative_to(REPO)) for p in READERS_TEXT])
def test_goals_are_stated_in_words_not_as_tracker_references(path: Path):
    found = issue_references(path.read_text(errors="replace"))
    assert not found, f"{path.relative_to(REPO)} refers to a tracker entry instead of saying what it means: {found}"


TREE_TEXT = list(text_files(REPO / "README.md", REPO / "docs", REPO / "bench", REPO / "scripts",
                            REPO / "edge_app" / "health", REPO / "tests" / "health"))


@pytest.mark.parametrize("path", TREE_TEXT, ids=[str(p.relative_to(REPO)) for p in TREE_TEXT])
def test_hand_written_trees_are_not_called_recorded(path: Path):
    if recorded_trees():
        pytest.skip("a recorded tree exists; its CAPTURE.md says what it is")  # not the case today
    if path == TREES / "README.md":
        return  # it defines the word
    claims = recorded_tree_claims(path.read_text(errors="replace"))
    assert not claims, (f"{path.relative_to(REPO)} calls a tree recorded, but every tree in tests/health/trees/ is "
                        f"synthetic (no CAPTURE.md with device, JetPack and capture command): {claims}")


def test_the_trees_folder_says_its_trees_are_synthetic():
    readme = (TREES / "README.md").read_text()
    for folder in sorted(p for p in TREES.iterdir() if p.is_dir() and p not in recorded_trees()):
        assert f"`{folder.name}/`" in readme, f"trees/README.md does not say what {folder.name}/ is"
    assert "**synthetic**" in readme


def test_health_tests_that_read_the_trees_say_synthetic_in_their_names():
    unnamed = []
    for path in sorted((REPO / "tests" / "health").glob("test_*.py")):
        tree = ast.parse(path.read_text())
        functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        # fixtures of the module that read a tree count as reading it
        tree_fixtures = {"synthetic_tree"} | {f.name for f in functions if not f.name.startswith("test_")
                                              and "TREES" in ast.unparse(f)}
        for function in functions:
            if not function.name.startswith("test_"):
                continue
            reads = "TREES" in ast.unparse(function) or any(a.arg in tree_fixtures for a in function.args.args)
            if reads and "synthetic" not in function.name:
                unnamed.append(f"{path.name}::{function.name}")
    assert not unnamed, f"these tests read the synthetic trees but do not say so: {unnamed}"


# The checks themselves catch what they are there for.

def test_the_wording_checks_catch_what_they_are_for():
    assert issue_references("what issue 4 asks for; Targets (Issue #25); issues 24 and 25") == ["issue 4", "Issue #25", "issues 24"]
    assert issue_references("against the issue's goals, for this issue") == ["the issue", "this issue"]
    assert issue_references("the fleet never issued it; an issue of the magazine") == []
    assert recorded_tree_claims("reading the recorded Orin NX tree") == ["recorded Orin NX tree"]
    assert recorded_tree_claims("tested against recorded trees of") == ["recorded trees"]
    assert recorded_tree_claims("the trees under tests/health are recorded") != []
    assert recorded_tree_claims("a recorded clip; the synthetic trees") == []
