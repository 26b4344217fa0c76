"""Device health: temperatures, throttling, power, GPU, memory and disk of the box (docs/health.md)."""
