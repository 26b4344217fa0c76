"""The REST API: a Flask app built by ``create_app`` and served by ``ApiServer`` (cheroot).

It is written against ``edge_app.reporting.protocol.ApplianceService`` only; nothing below the API
imports it.
"""
from edge_app.api.app import create_app
from edge_app.http_server.server import ApiServer

__all__ = ["create_app", "ApiServer"]
