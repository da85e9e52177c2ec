"""Drives the Python client for test/http/python-client.test.ts. Prints one JSON line per milestone.

  driver.py journal URL DIR N      publish N events (server down), print {"journaled": N}, then wait to be killed
  driver.py drain URL DIR          a new process on the same journal: deliver it, print the stats
  driver.py threads URL DIR N T    N events from T threads, close, print the stats
"""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "clients", "python"))
from plan_ledger import Plan, PlanLedgerClient  # noqa: E402

KEY = os.environ["PLAN_LEDGER_INGEST_KEY"]


def say(**fields):
    print(json.dumps(fields), flush=True)


def steps(n):
    return [{"stepId": f"s{i}", "index": i, "agentId": "agent", "task": f"task {i}"} for i in range(n)]


def publish_plan(client, plan_id, count):
    """plan.created then step.started events: ``count`` events for one plan."""
    plan = Plan(plan_id, "sess-" + plan_id)
    client.plan_created(plan, query="driver", steps=steps(3))
    for i in range(count - 1):
        client.step_started(plan, f"s{i % 3}")


def main():
    mode, url, journal = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "journal":
        n = int(sys.argv[4])
        c = PlanLedgerClient(url, ingest_key=KEY, journal_dir=journal, batch_size=50, max_backoff=0.5)
        for p in range(n // 50):
            publish_plan(c, f"jplan-{p}", 50)
        while c.stats().journaled < n:
            time.sleep(0.01)
        say(journaled=c.stats().journaled)
        time.sleep(600)  # killed by the test
    elif mode == "drain":
        c = PlanLedgerClient(url, ingest_key=KEY, journal_dir=journal, max_backoff=0.5)
        ok = c.flush(60)
        s = c.stats()
        c.close(5)
        say(flushed=ok, accepted=s.accepted, rejected=s.rejected, dropped=s.dropped)
    elif mode == "threads":
        n, t = int(sys.argv[4]), int(sys.argv[5])
        c = PlanLedgerClient(url, ingest_key=KEY, journal_dir=journal, max_backoff=0.5)
        per_thread = n // t

        def work(k):
            for p in range(per_thread // 100):
                publish_plan(c, f"t{k}-plan-{p}", 100)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(t)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        ok = c.close(60)
        s = c.stats()
        say(flushed=ok, accepted=s.accepted, rejected=s.rejected, dropped=s.dropped)


main()
