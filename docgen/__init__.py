"""The generators of the reference pages in docs/: configuration keys, REST routes, MQTT topics.

``scripts/gen_reference.py`` writes the pages with them and ``tests/project/test_docs_reference.py``
checks the pages against them. Not part of the installed package: the appliance never imports them.
"""
