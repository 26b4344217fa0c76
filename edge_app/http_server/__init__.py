"""What the appliance's REST API and the fleet service both serve HTTP with: the server and its
TLS (``server``, ``http_protocol``, ``http_limits``, ``listening``), bearer tokens, signed URLs and
the throttling of wrong ones (``auth``, ``signed_urls``, ``throttle``), the host check
(``hosts``), JSON errors, bodies and query parameters (``errors``, ``json_body``,
``json_provider``, ``query_params``), probes and static pages.

Nothing here knows the appliance or the fleet: both import this package, never each other.
"""
