"""Python client of plan-ledger: fire-and-forget publishing to ``plan-ledger serve`` and read helpers.

Standard library only (Python >= 3.9). See README.md beside this package.
"""
from ._approvals import PendingApproval
from ._contract import Violation
from .aio import AsyncPendingApproval, AsyncPlanLedgerClient
from .client import Conflict, NotFound, Plan, PlanLedgerClient, PlanLedgerError, PublishResult, Stats, StepInput
from .errors import ApprovalRefused
from .journal import JournalLockedError
from .results import (
    ActivePlan,
    Approval,
    ActivePlanStep,
    Checkpoint,
    Decision,
    EventStatus,
    ForkOutcome,
    Handoff,
    LayerProgress,
    LineageNode,
    PlanLineage,
    PlanPage,
    PlanSummary,
    PlanTimeline,
    ResumeCheckpoint,
    ResumePoint,
    ResumeStep,
    SessionActivePlan,
    SessionHistory,
    StepChanges,
    StepSpec,
    StepView,
    TimelineEntry,
)

__all__ = [
    "PlanLedgerClient",
    "AsyncPlanLedgerClient",
    "Plan",
    "StepInput",
    "PublishResult",
    "Violation",
    "Stats",
    "PlanLedgerError",
    "NotFound",
    "Conflict",
    "ApprovalRefused",
    "PendingApproval",
    "AsyncPendingApproval",
    "Approval",
    "JournalLockedError",
    "ActivePlan",
    "ActivePlanStep",
    "Checkpoint",
    "Decision",
    "EventStatus",
    "ForkOutcome",
    "Handoff",
    "LayerProgress",
    "LineageNode",
    "PlanLineage",
    "PlanPage",
    "PlanSummary",
    "PlanTimeline",
    "ResumeCheckpoint",
    "ResumePoint",
    "ResumeStep",
    "SessionActivePlan",
    "SessionHistory",
    "StepChanges",
    "StepSpec",
    "StepView",
    "TimelineEntry",
]
__version__ = "0.2.0"
