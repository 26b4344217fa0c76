"""What the ``edge-app`` commands do once ``edge_app.cli`` has parsed them: ``run_appliance``
(``edge-app run``), ``selftest``, and ``demo_clip`` (the demo's and the benchmarks' input clip).
"""
