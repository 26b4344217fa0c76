"""Fleet models on the appliance: artifacts fetched from the fleet service, verified and staged, the detector factory that uses them, later refetches, and ``models_state`` reported back."""
