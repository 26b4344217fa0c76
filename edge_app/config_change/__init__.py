"""The one way a running appliance's configuration changes, whoever asks: ``changes`` validates,
applies and saves under one lock; ``plan`` says what a change touches; ``checks`` says what this
machine can run; ``detect_switch`` is the MQTT detect switch as one origin among others.
The configuration itself (schema, file, secrets) is ``edge_app.config``.
"""
