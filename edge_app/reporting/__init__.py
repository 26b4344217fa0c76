"""What the running appliance offers its front ends: the ``ApplianceReads`` and ``EventDeletion``
protocols and the typed reports they answer with (``protocol``). The REST API, the MQTT stats
message and the systemd status line read the same reports. Below the pipeline and the API, so
both may use it.
"""
