"""Events: tracked objects of interest with a start, an end and a best snapshot (SPEC.md "Extensions").

* ``model``: the event object, its ``R/events`` message and snapshot (value objects);
* ``camera_analysis``: :class:`CameraAnalysis`, one per camera, fed every analysed frame;
* ``lifecycle``, ``snapshots``, ``counts``: the parts it is made of.
"""
