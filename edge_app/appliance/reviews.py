"""Review items on MQTT: ``R/reviews`` as events go out, and each camera's count of alerts not
reviewed on ``R/cameras/<id>/review/alerts`` (a Home Assistant sensor; docs/review.md).

:meth:`ReviewAnnouncer.on_event` runs on the analysis thread: it groups (pure, in memory) and
queues a message, never touching the disk. The counts are read from the event database by
:meth:`tick` on the stats thread, and only after something changed them: an alert began or ended,
items were marked, or the appliance started; at most every ``MIN_COUNT_INTERVAL_S``.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, List, Optional

from edge_app.events.model import EventMessage
from edge_app.mqtt.publisher import MqttPublisher
from edge_app.review.book import ReviewBook, ReviewUnavailable
from edge_app.review.feed import ReviewFeed
from edge_app.review.model import ALERT

log = logging.getLogger(__name__)

#: counting reads every stored event (about 0.4 s for 100,000 on a small CPU, docs/review.md): a
#: camera with alert after alert is counted again at most this often
MIN_COUNT_INTERVAL_S = 5.0


class ReviewAnnouncer:
    def __init__(self, publisher: Callable[[], MqttPublisher], feed: ReviewFeed, book: Optional[ReviewBook],
                 cameras: Callable[[], List[str]], *, min_interval_s: float = MIN_COUNT_INTERVAL_S,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._publisher = publisher  # read per message: a configuration change may replace it
        self._feed = feed
        self._book = book
        self._cameras = cameras
        self._min_interval_s = min_interval_s
        self._monotonic = monotonic
        self._counted_at: Optional[float] = None
        self._stale = threading.Event()
        self._stale.set()  # the counts go out once at start
        if book is not None:
            book.on_marked(self._stale.set)

    def on_event(self, message: EventMessage) -> EventMessage:
        """Chainable with the other event hooks: ``message`` is returned as it came."""
        try:
            review = self._feed.observe(message)
            if review is None:
                return message
            self._publisher().publish_review(review)
            was_alert = review.before is not None and review.before.severity == ALERT
            if review.after.severity == ALERT and (review.type != "update" or not was_alert):
                self._stale.set()
        except Exception:  # never let a review message stop analysis
            log.exception("review: handling an event of camera %s failed", message.after.camera_id)
        return message

    def tick(self) -> None:
        """On the stats thread: publish the unreviewed alert counts when they may have changed."""
        if self._book is None or not self._stale.is_set():
            return
        now_s = self._monotonic()
        if self._counted_at is not None and now_s - self._counted_at < self._min_interval_s:
            return
        self._counted_at = now_s
        self._stale.clear()
        cameras = self._cameras()
        try:
            counts = self._book.unreviewed_alerts(cameras)
        except ReviewUnavailable as err:
            log.warning("review: cannot count the unreviewed alerts: %s", err)
            self._stale.set()
            return
        publisher = self._publisher()
        for camera_id in cameras:
            publisher.publish_review_alerts(camera_id, counts.get(camera_id, 0))
