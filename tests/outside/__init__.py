"""A stand-in for a backend package outside this repo (see tests/test_backend_schemes.py)."""
