"""The REST API: a Flask app built by ``create_app``, served by :class:`edge_app.http_server.server.ApiServer`.

It is written against two narrow doors only: ``edge_app.reporting.protocol.ApplianceReads`` (what it
reads) and ``edge_app.config_change.changes.ConfigChanges`` (the one way a configuration changes),
plus ``EventDeletion`` for ``DELETE /api/v1/events/<id>``. Nothing below the API imports it.
"""
from edge_app.api.app import create_app

__all__ = ["create_app"]
