"""Multi-object tracking, zones and tripwires: pure building blocks, one instance per camera."""
from edge_app.track.tracker import UNTRACKED, Tracker, TrackerSettings

__all__ = ["UNTRACKED", "Tracker", "TrackerSettings"]
