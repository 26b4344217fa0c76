"""The OpenAPI 3.1 document of the REST API (``GET /api/openapi.json``): the routes' entries and the pieces they are assembled from."""
