"""The process around the appliance and the fleet service: stop signals that always arrive and an
exit that cannot abort (``shutdown``), systemd's notify protocol (``systemd``), callables named
across ``spawn`` for child processes (``named_callable``), one named background thread with a
bounded stop (``worker``), the one rule for when a wait for progress is a stall (``stall``), the
doubling wait of retry loops (``backoff``), and a file replaced whole or not at all
(``atomic_file``).
"""
