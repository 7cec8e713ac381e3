"""This repo's tests."""

import pytest

# The shipped contract suite's asserts live in the package: rewritten, a failure shows its
# values (registered before tests/conftest.py imports eventlog.testing).
pytest.register_assert_rewrite("eventlog.testing")
