"""Helpers for the log's tests: child-process scripts and PostgreSQL visibility waits."""
