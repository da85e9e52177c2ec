"""Shared by the seed examples: the client from the environment, and waiting for the worker."""
import os
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))  # run from a checkout without installing

from plan_ledger import NotFound, PlanLedgerClient  # noqa: E402


def client(journal: str) -> PlanLedgerClient:
    """PLAN_LEDGER_URL (default http://127.0.0.1:8080), PLAN_LEDGER_INGEST_KEY, PLAN_LEDGER_READ_KEY."""
    return PlanLedgerClient(
        os.environ.get("PLAN_LEDGER_URL", "http://127.0.0.1:8080"),
        ingest_key=os.environ.get("PLAN_LEDGER_INGEST_KEY"),
        read_key=os.environ.get("PLAN_LEDGER_READ_KEY"),
        journal_dir=os.path.join(os.environ.get("PLAN_LEDGER_JOURNAL_ROOT", "./data"), journal),
    )


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0) -> Any:
    """Polls ``check`` until it returns something truthy (the worker stores events asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = check()
            if value:
                return value
        except NotFound:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.1)
