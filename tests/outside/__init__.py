"""A stand-in for a backend package outside this repo (see `tests.conftest`)."""
