"""Multi-object tracking, zones and tripwires: pure building blocks, one instance per camera."""
from edge_app.track.geometry import points_in_polygon, reference_points
from edge_app.track.lines import Line, LineCounter, LineCrossing
from edge_app.track.speed import SpeedMeter, SpeedPair, SpeedReading
from edge_app.track.zone_speed import SpeedZone, ZoneSpeedMeter
from edge_app.track.tracker import UNTRACKED, Tracker, TrackerSettings
from edge_app.track.zones import Zone, ZoneChange, ZoneTracker

__all__ = [
    "UNTRACKED", "Tracker", "TrackerSettings",
    "Zone", "ZoneChange", "ZoneTracker", "SpeedZone", "ZoneSpeedMeter",
    "Line", "LineCounter", "LineCrossing", "SpeedMeter", "SpeedPair", "SpeedReading",
    "points_in_polygon", "reference_points",
]
