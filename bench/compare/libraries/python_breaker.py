#!/usr/bin/python3
"""Per-call cost of Debian's python3-circuitbreaker on the two paths fusebox-bench measures: a call
through a CLOSED breaker that succeeds, and a call an OPEN breaker rejects. Defaults, as a user
gets them; ns per call, the median of 5 runs. Prints one JSON object per line. Run by
bench/compare/libraries/run.sh."""
import json
import sys
import time
from importlib.metadata import PackageNotFoundError, version

from circuitbreaker import CircuitBreaker, CircuitBreakerError

CALLS = 200_000


def measure(call):
    for _ in range(20_000):
        call()
    runs = []
    for _ in range(5):
        start = time.perf_counter_ns()
        for _ in range(CALLS):
            call()
        runs.append((time.perf_counter_ns() - start) / CALLS)
    return sorted(runs)[2]


@CircuitBreaker(failure_threshold=5, recovery_timeout=20)
def closed():
    return 1


breaker = CircuitBreaker(failure_threshold=5, recovery_timeout=20)


@breaker
def failing():
    raise ValueError("down")


for _ in range(5):
    try:
        failing()
    except ValueError:
        pass


def rejected():
    try:
        failing()
    except CircuitBreakerError:
        return 0
    raise SystemExit("the breaker did not open")


try:
    v = version("circuitbreaker")
except PackageNotFoundError:
    v = "unknown"
for path, call in (("closed success", closed), ("open rejection", rejected)):
    print(json.dumps({"library": "python3-circuitbreaker", "version": v,
                      "runtime": f"python {sys.version.split()[0]}", "path": path,
                      "ns_per_call": round(measure(call), 1)}))
