"""The appliance's side of the fleet (docs/fleet.md): ``R/config/desired`` in, parsed and its
signature checked, ``R/config/reported`` out, and the desired version remembered across restarts.
The fleet service that sends desired configurations is ``edge_app.fleet_service``.
"""
