"""Events: tracked objects of interest with a start, an end and a best snapshot (SPEC.md "Extensions")."""
