"""The errors the read helpers raise: ``PlanLedgerError`` and its subclasses for 404 and 409."""
from __future__ import annotations

from typing import Any, Dict, Optional, Type


class PlanLedgerError(Exception):
    """A read failed: ``status`` is the HTTP status (0: the server could not be reached)."""

    def __init__(self, status: int, message: str, answer: Any = None) -> None:
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status
        self.message = message
        #: the server's JSON answer, when it sent one
        self.answer = answer


class NotFound(PlanLedgerError):
    """404: the plan, session or step does not exist (or has no stored output)."""


class Conflict(PlanLedgerError):
    """409: refused for what is stored: a fork's new plan id is taken, or its start or edits do not fit the parent."""


class ApprovalRefused(PlanLedgerError):
    """The ledger refused to consume an approval: do not run the call. ``reason``: ``already_consumed``,
    ``rejected``, ``expired``, ``undecided``, ``args_mismatch`` (409) or ``not_found`` (404: no request of
    that id is stored). ``approval``: the approval as stored, when the server sent it (a dict)."""

    def __init__(self, status: int, message: str, reason: str, approval: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(status, message)
        self.reason = reason
        self.approval = approval


_ERRORS: Dict[int, Type[PlanLedgerError]] = {404: NotFound, 409: Conflict}
