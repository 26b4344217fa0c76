"""``decoder: gstreamer``: pipelines planned as pure data, run with PyGObject, and a recorded camera's packets out of them."""
