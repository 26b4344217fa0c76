"""The benchmark on the host CPU: ``run`` (sections a-e and the long run) and ``analysis-cost``."""
