"""The tracker on synthetic scenes (``scenes``) against the reference ByteTrack (``compare``)."""
