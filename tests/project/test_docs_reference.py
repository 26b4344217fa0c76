"""The reference pages in docs/ are the code's: regenerated here, any difference fails.

After changing a configuration key, a route or a topic, run ``python scripts/gen_reference.py``
and commit the pages it rewrites.
"""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from docgen.config_keys import config_keys
from docgen.mqtt_topics import topic_pattern, undocumented_topics
from edge_app.config.schema import AppConfig
from edge_app.fleet_service.app import create_fleet_app
from edge_app.fleet_service.config import FleetConfig

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "run `python scripts/gen_reference.py` and commit the pages it rewrites"


def _run_generator(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_reference.py"), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_generated_pages_match_the_code():
    result = _run_generator("--check")
    assert result.returncode == 0, f"docs/ is out of date with the code; {REGENERATE}\n{result.stdout[-6000:]}{result.stderr}"


def _generator_module():
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "scripts" / "gen_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_check_fails_on_a_stale_page(tmp_path, monkeypatch, capsys):
    # A check that cannot fail proves nothing: a copy of docs/ whose generated block lost a key is stale.
    generator = _generator_module()
    (tmp_path / "docs").mkdir()
    for page in generator.PAGES:
        (tmp_path / page).write_text((ROOT / page).read_text(encoding="utf-8"), encoding="utf-8")
    page = tmp_path / "docs" / "configuration.md"
    original = page.read_text(encoding="utf-8")
    page.write_text(original.replace("| `model.conf_threshold` |", "| `model.conf_thresold` |", 1), encoding="utf-8")
    monkeypatch.setattr(generator, "ROOT", tmp_path)
    assert generator.main(["--check"]) == 1
    out, err = capsys.readouterr()
    assert "-| `model.conf_thresold` |" in out and "+| `model.conf_threshold` |" in out
    assert "run `python scripts/gen_reference.py`" in err
    assert generator.main([]) == 0  # regenerating repairs it
    assert page.read_text(encoding="utf-8") == original
    assert generator.main(["--check"]) == 0


def test_every_configuration_key_is_in_the_reference():
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    paths = [key.path for key in config_keys(AppConfig)]
    assert {"cameras[].zones[].polygon", "model.conf_threshold", "mqtt.tls.ca_certs", "api.allow_unsafe_sources"} <= set(paths)
    missing = [path for path in paths if f"| `{path}` |" not in text]
    assert not missing, f"not in docs/configuration.md: {missing}; {REGENERATE}"


def test_required_keys_and_bounds_come_from_the_schema():
    keys = {key.path: key for key in config_keys(AppConfig)}
    assert keys["model.path"].default == "required"
    assert keys["cameras[].id"].default == "required"
    assert keys["device_id"].default == '`"edge-01"`'
    assert keys["model.conf_threshold"].bounds == ">= 0; <= 1"
    assert keys["cameras"].bounds == "at most 64 items"
    assert keys["mqtt.qos"].type == "`0` \\| `1` \\| `2`"
    fleet = {key.path for key in config_keys(FleetConfig)}
    assert {"database.url", "database.events_retain_days", "topic_prefix", "mqtt.host"} <= fleet


def test_every_topic_is_described():
    assert undocumented_topics() == [], f"describe these topics in edge_app/mqtt/topic_docs.py TOPIC_DOCS, then {REGENERATE}"
    assert topic_pattern("camera_line_crossing") == "R/cameras/<camera_id>/lines/<line>/crossing"
    assert topic_pattern("zone_objects") == "R/zones/<zone>/<label>"


def test_every_fleet_route_is_in_the_rest_reference():
    config = FleetConfig()
    app = create_fleet_app(SimpleNamespace(config=config, current_config=lambda: config))
    routes = {(method, rule.rule) for rule in app.url_map.iter_rules()
              if rule.endpoint not in ("fleet_page.static", "fleet_page.shared_static")  # the page's files
              for method in rule.methods - {"HEAD", "OPTIONS"}}
    assert ("PATCH", "/api/v1/fleet/config") in routes
    text = (ROOT / "docs" / "rest-api.md").read_text(encoding="utf-8")
    fleet_part = text[text.index("## Fleet service"):]
    documented = {(m, re.sub(r"\?.*", "", p)) for m, p in re.findall(r"^\| `(GET|PUT|PATCH|POST|DELETE) ([^` ]+)`", fleet_part, re.M)}
    assert routes == documented, f"fleet routes not documented: {routes - documented}; documented but not served: {documented - routes}"


@pytest.mark.parametrize("page", ["configuration.md", "rest-api.md", "mqtt.md"])
def test_local_links_of_the_reference_pages_resolve(page):
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    anchors = {_anchor(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}
    for target, fragment in re.findall(r"\]\(([^)#:]*)(?:#([^)]*))?\)", text):
        if not target:
            assert fragment in anchors, f"{page}: no heading for #{fragment}"
            continue
        linked = ROOT / "docs" / target
        assert linked.exists(), f"{page}: {target} does not exist"
        if fragment and linked.suffix == ".md":
            their = {_anchor(h) for h in re.findall(r"^#+ (.+)$", linked.read_text(encoding="utf-8"), re.M)}
            assert fragment in their, f"{page}: {target} has no heading for #{fragment}"


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
