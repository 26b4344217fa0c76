"""The one error a detector raises: a model that cannot be loaded or run."""


class DetectorError(RuntimeError):
    """A model that cannot be loaded or run; the message is meant for the user."""
