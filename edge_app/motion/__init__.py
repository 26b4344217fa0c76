"""Motion gating: which frames are worth the detector (docs/configuration.md, ``motion``).

``detector`` finds motion on a small grey picture of each frame; ``gate`` decides, with the time
passed in, whether a camera's frame goes to the model; ``watch`` joins both for one camera on its
capture thread. Nothing here knows of cameras, MQTT or the pipeline.
"""
