"""PyAV (FFmpeg's libraries): ``decoder: ffmpeg`` for recorded cameras, opening a camera and teeing its packets, and network streams demuxed for NVDEC."""
