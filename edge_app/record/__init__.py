"""Recording: event clips with pre-roll and continuous segments, written by stream copy as fragmented MP4."""
