"""The growth campaign (``pytest -m growth``): commands whose memory must not grow with
what they read, measured as the peak RSS of a real ``eventlog`` process at two sizes."""
