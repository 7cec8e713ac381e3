"""Run every benchmark: ``python -m benchmarks``."""

import asyncio

from benchmarks import bench_append, bench_checkpoints, bench_langgraph

asyncio.run(bench_append.main())
asyncio.run(bench_checkpoints.main())
asyncio.run(bench_langgraph.main())
