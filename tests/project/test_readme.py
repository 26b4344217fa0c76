"""The README as a newcomer reads it: one screen with the two commands, links that lead somewhere,
and commands that do what it says when pasted."""
from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import List, Set, Tuple

import paho.mqtt.publish as publish

from testkit.skips import require_tool

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: what fits a terminal or a browser window without scrolling far
FIRST_SCREEN_LINES = 45
#: the README is a first page, not the manual
README_MAX_LINES = 80
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _code_lines(text: str) -> List[str]:
    """The lines inside ``` fences."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif fenced:
            lines.append(line)
    return lines


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> Set[str]:
    anchors, fenced = set(), False
    for line in _text(path).splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"^#+ ", line):  # a comment in a shell block is no heading
            anchors.add(_anchor(line.lstrip("#")))
    return anchors


def _local_links(page: Path) -> List[Tuple[Path, str]]:
    """(target, fragment) of every link of ``page`` that is not a URL."""
    links = []
    for target in LINK.findall(_text(page)):
        if re.match(r"^[a-z][a-z+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        links.append(((page.parent / path).resolve() if path else page, fragment))
    return links


def test_the_first_screen_says_what_it_is_and_gives_the_demo_and_the_test_command():
    lines = _text(README).splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; reference material belongs in docs/"
    first = "\n".join(lines[:FIRST_SCREEN_LINES])
    code = _code_lines(first)
    assert any(line.strip() == "./scripts/demo.sh" for line in code), "the demo command is not on the first screen"
    assert any(line.strip().startswith("./scripts/test.sh") for line in code), "the test command is not on the first screen"
    assert "video-analytics appliance" in first.split("\n## ")[0]  # what it is, before anything else
    headings = re.findall(r"^## (.+)$", _text(README), re.M)
    assert "Where to look next" in headings


def test_the_readme_names_how_long_the_whole_suite_takes():
    test_lines = [line for line in _code_lines(_text(README)) if line.startswith("./scripts/test.sh ")]
    assert any(re.search(r"about \d+ minutes on \d+ cores", line) for line in test_lines), test_lines


def test_every_relative_link_of_the_readme_and_docs_resolves():
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target, fragment in _local_links(page):
            if not target.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} does not exist")
            elif fragment and target.suffix == ".md" and fragment not in _anchors(target):
                broken.append(f"{page.relative_to(ROOT)}: {target.relative_to(ROOT)} has no heading for #{fragment}")
    assert not broken, "\n".join(broken)


def test_every_docs_page_is_reachable_from_the_readme():
    seen, todo = set(), [README.resolve()]
    while todo:
        page = todo.pop()
        if page in seen or page.suffix != ".md" or not page.exists():
            continue
        seen.add(page)
        todo += [target for target, _ in _local_links(page)]
    unreachable = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "docs").glob("*.md")) if p.resolve() not in seen]
    assert not unreachable, f"no link leads from README.md to {unreachable}"


def _demo_model_name() -> str:
    (name,) = re.findall(r"^MODEL=(\S+)$", _text(ROOT / "scripts" / "demo.sh"), re.M)
    return name


def test_the_readme_says_where_the_demo_model_comes_from_with_the_name_the_demo_looks_for():
    demo_page = ROOT / "docs" / "demo.md"
    assert any(target == demo_page.resolve() for target, _ in _local_links(README))
    code = _code_lines(_text(README)) + _code_lines(_text(demo_page))
    assert any(line.startswith("yolo export model=yolov8n.pt format=onnx dynamic=True") for line in code)
    copies = [line for line in code if line.startswith("cp ") and ".onnx" in line]
    assert copies, "no command copies the exported model where the demo finds it"
    name = _demo_model_name()
    wrong = [line for line in copies if not line.split("#")[0].rstrip().endswith(name)]
    assert not wrong, f"scripts/demo.sh looks for {name}, these copy to another name: {wrong}"


def test_the_readme_says_the_demo_needs_no_token_because_it_listens_on_loopback():
    section = _text(README).split("## Try it", 1)[1].split("\n## ", 1)[0]
    assert "loopback" in section and "no API token" in section
    assert "EDGE_APP_DEMO_PORT=" in section  # and how to run it when 8080 is taken
    assert "EDGE_APP_DEMO_PORT" in _text(ROOT / "scripts" / "demo.sh")


def test_the_readme_mosquitto_sub_line_prints_messages_but_no_snapshot_bytes(mosquitto_broker):
    require_tool("mosquitto_sub")
    (line,) = [line for line in _code_lines(_text(README)) if line.startswith("mosquitto_sub ")]
    jpeg = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 8 + b"\xff\xd9"
    retained = [("edge_app/demo/status", b'{"state": "online", "device_id": "demo"}'),
                ("edge_app/demo/cameras/demo/person/snapshot", jpeg),
                ("edge_app/demo/cameras/demo/objects/person", b'{"count": 1}')]
    for topic, payload in retained:
        publish.single(topic, payload, retain=True, hostname=mosquitto_broker.host, port=mosquitto_broker.port)
    command = shlex.split(line) + ["-h", mosquitto_broker.host, "-p", str(mosquitto_broker.port), "-W", "2"]
    done = subprocess.run(command, capture_output=True, timeout=30)
    assert b"edge_app/demo/status" in done.stdout and b"edge_app/demo/cameras/demo/objects/person" in done.stdout
    assert b"\xff\xd8" not in done.stdout and b"snapshot" not in done.stdout
