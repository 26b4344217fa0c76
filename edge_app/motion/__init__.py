"""Motion gating: which frames are worth the detector (docs/configuration.md, ``motion``).

``detector`` finds motion on a small grey picture of each frame; ``gate`` decides, with the time
passed in, whether a camera's frame goes to the model; ``watch`` joins both for one camera on its
capture thread; ``gating`` gives each camera of the appliance its watch as the configuration
says. None of it knows of MQTT or the pipeline: the appliance passes in what to call.
"""
