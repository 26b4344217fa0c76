"""The running appliance: its parts wired together (``appliance``), the analysis of every camera,
model changes, the reports it builds from its parts, and its supervision under ``edge-app run``.
"""
