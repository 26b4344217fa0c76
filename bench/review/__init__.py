"""``python -m bench.review``: what the review queries cost on a large event database (docs/review.md)."""
