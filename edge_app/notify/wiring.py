"""A :class:`~edge_app.notify.notifier.Notifier` for a running configuration."""
from __future__ import annotations

from typing import Callable, Optional

from edge_app.config.schema import AppConfig
from edge_app.notify.clip_links import ClipLinks
from edge_app.notify.notifier import Notifier
from edge_app.review.live import LiveReview
from edge_app.review.model import AlertRule


def notifier_for(config: Callable[[], AppConfig], snapshot_of: Optional[Callable[[str], Optional[bytes]]] = None,
                 clip_links: Optional[ClipLinks] = None, **options) -> Notifier:
    """Targets from the configuration at start (only the file changes them, and a restart applies
    that); review rules read from ``config()`` per message, so a change through the API applies at once."""
    first = config()
    review = LiveReview(gap_s=lambda: config().review.gap_s,
                        rule_of=lambda camera_id: AlertRule.of(config().alert_rules(camera_id)))
    return Notifier(first.notifications, first.device_id, review, snapshot_of=snapshot_of or (lambda _event_id: None),
                    clip_links=clip_links, **options)
