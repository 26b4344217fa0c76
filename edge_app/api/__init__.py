"""The REST API: a Flask app built by ``create_app``, served by :class:`edge_app.http_server.server.ApiServer`.

It is written against ``edge_app.reporting.protocol.ApplianceService`` only; nothing below the API
imports it.
"""
from edge_app.api.app import create_app

__all__ = ["create_app"]
