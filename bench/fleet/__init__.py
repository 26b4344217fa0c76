"""A simulated fleet (``sim``: appliances in one process) and the fleet server measured under it (``server``)."""
