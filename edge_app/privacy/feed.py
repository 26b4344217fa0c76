"""A camera feed whose frames reach the detector already masked (``privacy.detect: false``)."""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

from edge_app.privacy.images import masked_now
from edge_app.privacy.masks import PrivacyMasks


class MaskedFeed:
    """Wraps what the pipeline takes frames from (``CameraWorker.take``): each frame it hands out
    is a BGR copy with the masks applied, so neither the model nor anything after it sees them."""

    def __init__(self, feed: Any, masks: PrivacyMasks) -> None:
        self._feed = feed
        self.masks = masks

    def take(self):
        frame = self._feed.take()
        if frame is None:
            return None
        return dataclasses.replace(frame, image=masked_now(frame.image, self.masks))

    @property
    def waits_for_consumer(self) -> bool:
        return self._feed.waits_for_consumer

    def __getattr__(self, name: str) -> Any:  # policy, stats, ...: the camera's own
        return getattr(self._feed, name)


def detector_feed(feed: Any, masks: Optional[PrivacyMasks]) -> Any:
    """``feed`` as the detector should see it: masked when the camera hides its masks from it."""
    return feed if masks is None else MaskedFeed(feed, masks)
