"""Masking time on adversarial inputs: 100 KB and 1 MB of each, every pattern on (`all`), best of two runs.

The inputs are the ones tests/unit/masking/test_linear_time.py asserts on (repeated units built to make
backtracking regexes go quadratic), plus 1 MB of realistic kubectl output as a baseline. Needs no database.

    python -m tests.bench.masking [--only NAME ...]

Prints one line per input, then the figures as JSON on the last line.
"""

from __future__ import annotations

import argparse
import json
import time

from agents.config.schema import MaskingConfig
from agents.mcp.masking import DataMasker
from tests.unit.masking.test_linear_time import ADVERSARIAL, ONE_MB, RATIO_FLOOR_S, measure
from tests.unit.masking_demo.samples import HEALTHY_POD_YAML, SECRET_JSON, SECRET_YAML


def _realistic() -> tuple[float, float]:
    masker = DataMasker.from_config(MaskingConfig(pattern_groups=["all"]))
    unit = HEALTHY_POD_YAML + "---\n" + SECRET_YAML + "---\n" + SECRET_JSON

    def best(size: int) -> float:
        text = (unit * (size // len(unit) + 1))[:size]
        times = []
        for _ in range(2):
            start = time.perf_counter()
            masker.mask(text)
            times.append(time.perf_counter() - start)
        return min(times)

    return best(ONE_MB // 10), best(ONE_MB)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="input names (default: all)")
    args = parser.parse_args(argv)
    names = args.only or sorted(ADVERSARIAL)
    figures: dict[str, dict[str, float]] = {}
    for name in [*names, "kubectl-output"]:
        small, large = _realistic() if name == "kubectl-output" else measure(name)
        ratio = large / max(small, RATIO_FLOOR_S)
        figures[name] = {"s_100kb": round(small, 4), "s_1mb": round(large, 4), "ratio": round(ratio, 1)}
        print(f"{name:24} 100KB {small * 1000:8.1f} ms   1MB {large * 1000:8.1f} ms   ratio {ratio:5.1f}", flush=True)
    worst = max(figures.values(), key=lambda f: f["s_1mb"])
    result = {"inputs": figures, "worst_1mb_s": worst["s_1mb"],
              "worst_ratio": max(f["ratio"] for f in figures.values())}
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
