"""The errors the read helpers raise: ``PlanLedgerError`` and its subclasses for 404 and 409."""
from __future__ import annotations

from typing import Dict, Type


class PlanLedgerError(Exception):
    """A read failed: ``status`` is the HTTP status (0: the server could not be reached)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status
        self.message = message


class NotFound(PlanLedgerError):
    """404: the plan, session or step does not exist (or has no stored output)."""


class Conflict(PlanLedgerError):
    """409: refused for what is stored: a fork's new plan id is taken, or its start or edits do not fit the parent."""


_ERRORS: Dict[int, Type[PlanLedgerError]] = {404: NotFound, 409: Conflict}
