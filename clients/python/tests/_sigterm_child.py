"""Child process of test_sigterm: a client with the SIGTERM handler installed publishes 100 events to a
server that accepts connections and never answers, prints ``closing`` and calls ``close(5)``; the test
sends SIGTERM while that close waits. argv: URL JOURNAL_DIR threaded|asyncio"""
import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from plan_ledger import AsyncPlanLedgerClient, Plan, PlanLedgerClient  # noqa: E402

url, journal, mode = sys.argv[1], sys.argv[2], sys.argv[3]
plan = Plan("plan-term", "sess-term")


def publish(ledger) -> None:
    ledger.plan_created(plan, query="term", steps=[{"stepId": "s0", "index": 0, "agentId": "a", "task": "t"}])
    for _ in range(99):
        ledger.step_started(plan, "s0")


if mode == "threaded":
    c = PlanLedgerClient(url, journal_dir=journal, timeout=30)
    c.install_sigterm_handler()
    publish(c)
    print("closing", flush=True)
    c.close(5)
else:

    async def main() -> None:
        ledger = AsyncPlanLedgerClient(url, journal_dir=journal, timeout=30)
        ledger.install_sigterm_handler()
        publish(ledger)
        print("closing", flush=True)
        await ledger.close(5)

    asyncio.run(main())
print("closed", flush=True)
