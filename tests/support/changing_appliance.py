"""An ``Appliance`` whose configuration changes go the one change path (``ConfigChanges``) and are
saved to a real configuration file, as under ``edge-app run``: the fixture of the model tests."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Tuple

from edge_app.appliance.appliance import Appliance
from edge_app.config.file import ConfigFile, parse_config, save_config
from edge_app.config_change.changes import ChangeRules, ConfigChanges


def appliance_with_changes(data: Dict[str, Any], config_path: Path, **options: Any) -> Tuple[Appliance, ConfigChanges]:
    """The appliance of ``data``, saved at ``config_path`` first; not started. ``options`` go to ``Appliance``."""
    config = parse_config(data)
    save_config(config, config_path)
    appliance = Appliance(config, change_rules=ChangeRules(config_file=ConfigFile(config_path)), **options)
    return appliance, appliance.changes
