"""Python client of plan-ledger: fire-and-forget publishing to ``plan-ledger serve`` and read helpers.

Standard library only (Python >= 3.9). See README.md beside this package.
"""
from .client import NotFound, Plan, PlanLedgerClient, PlanLedgerError, PublishResult, Stats
from .journal import JournalLockedError

__all__ = ["PlanLedgerClient", "Plan", "PublishResult", "Stats", "PlanLedgerError", "NotFound", "JournalLockedError"]
__version__ = "0.1.0"
