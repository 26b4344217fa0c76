"""Events: tracked objects of interest with a start, an end and a best snapshot (docs/mqtt.md, "The event object").

* ``model``: the event object, its ``R/events`` message and snapshot (value objects);
* ``camera_analysis``: :class:`CameraAnalysis`, one per camera, fed every analysed frame;
* ``lifecycle``, ``snapshots``, ``counts``: the parts it is made of.
"""
