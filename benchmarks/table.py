"""Print a ``--json`` file of ratios as the README's markdown table:
``python -m benchmarks.table ratios.json``."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def rows(ratios: list[dict[str, object]]) -> list[str]:
    lines = ["| figure | baseline (same run) | ratio | goal | |", "|---|---|---:|---|---|"]
    for ratio in ratios:
        met = ratio.get("met")
        verdict = "" if met is None else ("met" if met else "missed")
        lines.append(f"| {ratio['name']} | {ratio['baseline']} | {ratio['ratio']:.2f}× | "
                     f"{ratio['goal']} | {verdict} |")
    return lines


if __name__ == "__main__":
    print("\n".join(rows(json.loads(Path(sys.argv[1]).read_text()))))
