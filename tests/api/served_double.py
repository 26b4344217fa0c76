"""The real API over real HTTP in front of the in-memory appliance double, for tests outside
tests/api that need one of their own (a module-scoped browser page, a fleet talking to it)."""
from __future__ import annotations

import copy
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, Tuple

from edge_app.api import create_app
from edge_app.http_server.server import ApiServer
from edge_app.http_server.listening import request_listening_hosts
from edge_app.appliance.event_deletion import StoredEventDeletion
from edge_app.config.file import merge_patch, parse_config
from tests.api.conftest import BASE_CONFIG
from tests.api.in_memory_service import InMemoryService, saving_change_path


@contextmanager
def served_double(folder: Path, model_path: Path, config_patch: Dict[str, Any]) -> Iterator[Tuple[ApiServer, InMemoryService]]:
    """(server, service): BASE_CONFIG with ``config_patch`` and the model, its file in ``folder``,
    changes wired as edge_app/commands/run_appliance.py wires them; stopped and closed at the end."""
    config = parse_config(merge_patch(copy.deepcopy(BASE_CONFIG), {"model": {"path": str(model_path)}, **config_patch}))
    service = InMemoryService(config, folder / "config.yaml")
    changes = saving_change_path(service, listening_hosts=request_listening_hosts)
    server = ApiServer(create_app(service, changes, StoredEventDeletion(service.event_store)), "127.0.0.1", 0)
    server.start()
    try:
        yield server, service
    finally:
        server.stop(timeout_s=5)
        service.close()
