"""The running appliance: its parts wired together (``appliance``), what the API reads of it
(``read_side``), the analysis of every camera, model changes and swaps, the reports it builds
from its parts, and its supervision under ``edge-app run``.
"""
