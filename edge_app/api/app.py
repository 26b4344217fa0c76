"""The Flask application factory of the REST API.

The app gets narrow doors, never the appliance: ``reads`` (what the routes read), ``changes`` (the
one change path: every route that changes the configuration goes through it, with its rules and
its lock) and ``deletion`` (``DELETE /api/v1/events/<id>``). Nothing the API holds can apply a
configuration any other way. Each blueprint registers module-level views bound to what it is
given: there is no module-level app and nothing is hung on the app object, so several apps (one
per test, say) can live in one process without seeing each other's appliance.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional, Type

from flask import Flask, Request, request

from edge_app.http_server.auth import install_auth
from edge_app.api.camera_edits import camera_edits_blueprint
from edge_app.api.cameras import cameras_blueprint
from edge_app.api.config_routes import config_blueprint
from edge_app.api.config_writer import ConfigWriter
from edge_app.config_change.changes import ConfigChanges
from edge_app.api.dashboard import dashboard_blueprint
from edge_app.api.error_handlers import register_error_handlers
from edge_app.http_server.headers import install_common_headers
from edge_app.api.events import events_blueprint
from edge_app.http_server.hosts import install_host_check
from edge_app.http_server.json_provider import install_json_provider
from edge_app.api.metrics import metrics_blueprint
from edge_app.api.profiles import profiles_blueprint
from edge_app.api.openapi_spec import openapi_blueprint
from edge_app.api.recordings import LINK_ENDPOINTS, SIGNED_ENDPOINTS, recordings_blueprint
from edge_app.reporting.protocol import ApplianceReads, EventDeletion
from edge_app.api.review import review_blueprint
from edge_app.api.status import probes_blueprint, status_blueprint
from edge_app.config.schema import AppConfig
from edge_app.notify.clip_links import ClipLinks

logger = logging.getLogger(__name__)

# Only these accept ``?token=``: they are what a browser loads through <img src>.
QUERY_TOKEN_ENDPOINTS = frozenset({"cameras.snapshot", "cameras.stream", "events.snapshot"})


def _live_limit_request_class(get_config: Callable[[], AppConfig]) -> Type[Request]:
    """A request class whose body limit is api.max_body_bytes of the running configuration.

    app.config is read by every request thread, so rewriting it on each PATCH would be a race;
    asking the configuration per request makes a changed limit apply to the next request.
    """

    class LiveLimitRequest(Request):
        @property
        def max_content_length(self) -> Optional[int]:  # type: ignore[override]
            return get_config().api.max_body_bytes

    return LiveLimitRequest


def create_app(
    reads: ApplianceReads,
    changes: ConfigChanges,
    deletion: EventDeletion,
    *,
    max_live_streams: int = 32,
    max_live_streams_per_camera: int = 8,
    clip_links: Optional[ClipLinks] = None,
) -> Flask:
    """Build the REST API over ``reads``, ``changes`` and ``deletion`` (all three required).

    ``changes`` is the appliance's one change path, shared with the fleet, the detect switch and
    model reloads; the running configuration is asked of it on every request, so a new token or
    body limit applies without a restart. ``max_live_streams`` bounds concurrently open MJPEG live
    views, ``max_live_streams_per_camera`` those of one camera (keep both well below the server's
    worker threads). ``clip_links`` checks the notifications' clip links (None: there are none).
    """
    get_config: Callable[[], AppConfig] = changes.current
    app = Flask(__name__, static_folder=None)
    app.request_class = _live_limit_request_class(get_config)
    install_json_provider(app)  # never NaN or Infinity; keys in the order of the schema and docs/configuration.md
    # The limit at start; requests read the running configuration (see _live_limit_request_class).
    app.config["MAX_CONTENT_LENGTH"] = get_config().api.max_body_bytes

    # The host check comes first: a rebound request must not even learn whether its token works.
    install_host_check(app, get_config)
    # A notification's clip link carries no token: its route checks the link's signature itself.
    install_auth(app, get_config, QUERY_TOKEN_ENDPOINTS, signed_endpoints=SIGNED_ENDPOINTS,
                 authenticated_elsewhere=lambda: request.endpoint in LINK_ENDPOINTS)
    register_error_handlers(app)

    app.register_blueprint(probes_blueprint(reads))
    app.register_blueprint(status_blueprint(reads))
    # One writer for every route that changes the configuration: one set of rules, one lock.
    writer = ConfigWriter(changes)
    app.register_blueprint(config_blueprint(writer))
    app.register_blueprint(camera_edits_blueprint(writer))
    app.register_blueprint(profiles_blueprint(writer))
    app.register_blueprint(cameras_blueprint(reads, get_config, max_live_streams, max_live_streams_per_camera))
    app.register_blueprint(events_blueprint(reads, deletion))
    app.register_blueprint(recordings_blueprint(reads, get_config, clip_links))
    app.register_blueprint(metrics_blueprint(reads))
    app.register_blueprint(review_blueprint(reads))
    app.register_blueprint(openapi_blueprint())
    app.register_blueprint(dashboard_blueprint())

    install_common_headers(app)

    return app
