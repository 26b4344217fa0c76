"""Review items: a camera's events grouped by activity period, each an alert or a detection."""
