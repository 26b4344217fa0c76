"""The chaos soak: schedule and run (``soak``), probes (``probes``), settings, goals and table (``report``)."""
