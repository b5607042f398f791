"""What prometheus_client's multiprocess mode costs a worker, against keeping metrics in process memory.

    python -m tests.bench.metrics_modes

Per mode, a fresh interpreter times one LLM call's worth of metric updates (`observe_llm_call`: three counters
and a histogram) and one iteration's histogram observation; in multiprocess mode it then forks PROCESSES
children that each record a realistic label spread (providers × models, MCP servers × tools) and times a
scrape that sums every process file. The last line is JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap

PROCESSES = 8  # e.g. 2 worker pods' worth of prefork children, plus replaced children's leftover files
CALLS = 20_000

CHILD = textwrap.dedent(f"""
    import json, os, time
    from types import SimpleNamespace
    from tarsy import metrics

    usage = SimpleNamespace(input_tokens=1200, output_tokens=300, thinking_tokens=80)
    started = time.perf_counter()
    for i in range({CALLS}):
        metrics.observe_llm_call(provider="google", model="gemini-2.5-pro", success=True, duration_ms=900, usage=usage)
        metrics.ITERATION_SECONDS.labels("react").observe(2.5)
    per_call_us = (time.perf_counter() - started) / {CALLS} * 1e6
    scrape_ms = None
    if metrics.MULTIPROC_DIR:
        pids = []
        for p in range({PROCESSES}):
            pid = os.fork()
            if pid == 0:
                for provider in ("google", "openai", "anthropic", "xai"):
                    for model in ("m1", "m2"):
                        metrics.observe_llm_call(provider=provider, model=model, success=p % 2 == 0,
                                                 duration_ms=1500, usage=usage)
                for server in range(4):
                    for tool in range(10):
                        metrics.observe_mcp_call(server=f"s{{server}}", tool=f"t{{tool}}", success=True, duration_ms=40)
                os._exit(0)
            pids.append(pid)
        for pid in pids:
            os.waitpid(pid, 0)
        from prometheus_client import generate_latest
        times = []
        for _ in range(20):
            t = time.perf_counter()
            body = generate_latest(metrics.process_registry())
            times.append(time.perf_counter() - t)
        scrape_ms = sorted(times)[len(times) // 2] * 1000
    print(json.dumps({{"per_llm_call_us": round(per_call_us, 2),
                      "scrape_ms": round(scrape_ms, 2) if scrape_ms is not None else None}}))
""")


def run(multiproc: bool) -> dict:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tarsy.settings.base",
           "SECRET_KEY": os.environ.get("SECRET_KEY", "x")}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    with tempfile.TemporaryDirectory() as directory:
        if multiproc:
            env["PROMETHEUS_MULTIPROC_DIR"] = directory
        out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    memory, shared = run(False), run(True)
    print(json.dumps({"in_memory_us_per_llm_call": memory["per_llm_call_us"],
                      "multiprocess_us_per_llm_call": shared["per_llm_call_us"],
                      "multiprocess_scrape_ms": shared["scrape_ms"], "processes": PROCESSES + 1}))


if __name__ == "__main__":
    main()
