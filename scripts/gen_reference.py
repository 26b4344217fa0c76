#!/usr/bin/env python3
"""Regenerate the reference parts of docs/ from the code: configuration keys, REST routes, MQTT topics.

    python scripts/gen_reference.py           # rewrite the generated blocks in docs/
    python scripts/gen_reference.py --check   # exit 1 and show the difference if a page is stale

Each page keeps its hand-written text; only the blocks between the markers below are generated.
tests/project/test_docs_reference.py runs the check, so a new configuration key, route or topic fails
the suite until the pages are regenerated.
"""
from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path
from typing import Callable, Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's edge_app and docgen, not an installed edge_app

COMMAND = "python scripts/gen_reference.py"
BEGIN = "<!-- BEGIN GENERATED {name}: do not edit; run `" + COMMAND + "` -->"
END = "<!-- END GENERATED {name} -->"


def _appliance_config() -> str:
    from docgen.config_keys import config_table
    from edge_app.config.schema import AppConfig
    return config_table(AppConfig)


def _fleet_config() -> str:
    from docgen.config_keys import config_table
    from edge_app.fleet_service.config import FleetConfig
    return config_table(FleetConfig)


def _rest_api() -> str:
    from docgen.openapi_markdown import openapi_markdown
    from edge_app.api.openapi_spec import build_openapi
    from edge_app.config.schema import AppConfig
    # The configuration's schemas are the keys of docs/configuration.md: linked there, not repeated.
    config_schemas = ["AppConfig", *AppConfig.model_json_schema().get("$defs", {})]
    return openapi_markdown(build_openapi(), {name: "configuration.md#appliance-configuration" for name in config_schemas})


def _mqtt_topics() -> str:
    from docgen.mqtt_topics import topics_markdown
    return topics_markdown()


def _event_object() -> str:
    from edge_app.mqtt.topic_docs import event_object_example
    return f"```json\n{event_object_example()}\n```\n"


def _occupancy_event() -> str:
    from edge_app.mqtt.topic_docs import occupancy_event_example
    return f"```json\n{occupancy_event_example()}\n```\n"


#: page -> [(block name, generator)]
PAGES: Dict[str, List[Tuple[str, Callable[[], str]]]] = {
    "docs/configuration.md": [("appliance-config", _appliance_config), ("fleet-config", _fleet_config)],
    "docs/rest-api.md": [("appliance-rest", _rest_api)],
    "docs/mqtt.md": [("mqtt-topics", _mqtt_topics), ("event-object", _event_object),
                     ("occupancy-event", _occupancy_event)],
    "docs/analytics.md": [("occupancy-event", _occupancy_event)],
}


def render(text: str, blocks: List[Tuple[str, Callable[[], str]]], page: str) -> str:
    """``text`` with each named block replaced by what its generator makes now."""
    for name, generate in blocks:
        begin, end = BEGIN.format(name=name), END.format(name=name)
        pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.S)
        if not pattern.search(text):
            raise SystemExit(f"{page}: the markers of block {name!r} are missing:\n{begin}\n{end}")
        text = pattern.sub(lambda _: f"{begin}\n{generate()}{end}", text, count=1)
    return text


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a page is out of date")
    args = parser.parse_args(argv)
    stale = []
    for page, blocks in PAGES.items():
        path = ROOT / page
        old = path.read_text(encoding="utf-8")
        new = render(old, blocks, page)
        if new == old:
            continue
        if args.check:
            stale.append(page)
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), page, f"{page} (generated)"))
        else:
            path.write_text(new, encoding="utf-8")
            print(f"updated {page}")
    if stale:
        print(f"\n{', '.join(stale)} out of date with the code; run `{COMMAND}` and commit the result", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
