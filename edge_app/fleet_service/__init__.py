"""The fleet service (``edge-app fleet``): one inventory of every appliance behind one broker.

It subscribes to the appliances' retained and live topics, keeps devices, cameras, stats,
counts, events and configuration rollouts in SQLite or PostgreSQL, and serves them over the
same REST server (auth, TLS, limits) as the appliance's own API.
"""
