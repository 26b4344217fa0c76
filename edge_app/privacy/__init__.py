"""Privacy masks: areas of a camera's picture that never leave the device (docs/privacy.md)."""
