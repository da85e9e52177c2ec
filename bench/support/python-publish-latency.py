"""publish() latency of the Python client, one perf_counter_ns pair per call. Prints one JSON line.

  python3 python-publish-latency.py URL JOURNAL_DIR N [threaded|asyncio]

Each publish() stamps, checks (the contract's schema rules) and encodes the event in the caller's
thread. ``asyncio`` publishes from a coroutine through AsyncPlanLedgerClient (publish stays
synchronous) and awaits its flush and close.
"""
import asyncio
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))
from plan_ledger import AsyncPlanLedgerClient, Plan, PlanLedgerClient  # noqa: E402

url, journal, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
mode = sys.argv[4] if len(sys.argv) > 4 else "threaded"
options = dict(ingest_key=os.environ.get("PLAN_LEDGER_INGEST_KEY"), journal_dir=journal, max_backoff=0.5)
plans = [Plan(f"bench-plan-{i}", "bench-session") for i in range(100)]
clock = time.perf_counter_ns


def measure(client):
    samples = []
    for _ in range(2_000):  # warm-up
        client.step_started(plans[0], "s0")
    for i in range(n):
        plan = plans[i % 100]
        t0 = clock()
        client.step_completed(plan, "s0", input_tokens=100, output_tokens=50, model="gpt-4o", result="ok")
        samples.append(clock() - t0)
        if i % 1000 == 999:
            time.sleep(0.001)  # an executor does other work between events; the sender thread gets the GIL
    samples.sort()
    return samples


def report(samples, flushed, stats):
    pick = lambda q: round(samples[min(len(samples) - 1, int(q * len(samples)))] / 1000, 1)  # noqa: E731
    print(json.dumps({"n": n, "mode": mode, "p50Us": pick(0.5), "p99Us": pick(0.99), "p999Us": pick(0.999), "maxUs": round(samples[-1] / 1000, 1), "flushed": flushed, "accepted": stats.accepted, "journaled": stats.journaled, "dropped": stats.dropped, "invalid": stats.invalid + stats.unencodable}))


if mode == "asyncio":

    async def main():
        async with AsyncPlanLedgerClient(url, **options) as client:
            samples = measure(client)
            flushed = await client.flush(60)
            stats = client.stats()
        report(samples, flushed, stats)

    asyncio.run(main())
else:
    client = PlanLedgerClient(url, **options)
    samples = measure(client)
    flushed = client.flush(60)
    stats = client.stats()
    client.close(5)
    report(samples, flushed, stats)
