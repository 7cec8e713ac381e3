"""Print ``--json`` files of ratios as the markdown table of docs/benchmarks.md, one ratio
column per run (the last run holding a figure decides its verdict):
``python -m benchmarks.table run1.json run2.json``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def rows(runs: list[list[dict[str, Any]]]) -> list[str]:
    by_name = [{ratio["name"]: ratio for ratio in run} for run in runs]
    heads = " | ".join(f"run {n + 1}" for n in range(len(runs)))
    lines = [f"| figure | baseline (same run) | {heads} | goal | latest run |",
             "|---|---|" + "---:|" * len(runs) + "---|---|"]
    names = list(dict.fromkeys(ratio["name"] for run in runs for ratio in run))
    for name in names:
        cells = " | ".join(
            f"{run[name]['ratio']:.2f}×" if name in run else "–" for run in by_name
        )
        ratio = next(run[name] for run in reversed(by_name) if name in run)
        met = ratio.get("met")
        verdict = "" if met is None else ("met" if met else "missed")
        lines.append(f"| {ratio['name']} | {ratio['baseline']} | {cells} | {ratio['goal']} | "
                     f"{verdict} |")
    return lines


if __name__ == "__main__":
    print("\n".join(rows([json.loads(Path(name).read_text()) for name in sys.argv[1:]])))
