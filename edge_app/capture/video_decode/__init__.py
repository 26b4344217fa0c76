"""Video decoding: which decoders this device has and what ``decoder: auto`` picks, NVDEC, and a camera decoded in a child process with its frames handed over in GPU memory."""
