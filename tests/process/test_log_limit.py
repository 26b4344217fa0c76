"""One log line per key and interval, whoever floods: the API's wrong tokens, the fleet's
ingest, refused desired configurations."""
from __future__ import annotations

from edge_app.process.log_limit import LogLimiter


def test_the_log_limiter_counts_what_it_left_out():
    now = [0.0]
    limiter = LogLimiter(interval_s=60.0, clock=lambda: now[0])
    assert limiter.allow("x") == (True, 0)
    assert limiter.allow("x") == (False, 0)
    assert limiter.allow("x") == (False, 0)
    assert limiter.allow("y") == (True, 0)
    now[0] = 61.0
    assert limiter.allow("x") == (True, 2)


def test_the_log_limiter_forgets_the_least_recent_key_beyond_its_bound():
    now = [0.0]
    limiter = LogLimiter(interval_s=60.0, max_keys=2, clock=lambda: now[0])
    for key in ("a", "b", "c"):
        assert limiter.allow(key) == (True, 0)
    # "a" was pushed out: it is logged again at once, as a key never seen
    assert limiter.allow("a") == (True, 0)
    assert limiter.allow("c") == (False, 0)
