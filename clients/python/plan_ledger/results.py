"""Typed answers of the read helpers.

Each result is a frozen dataclass with snake_case attributes (``result.active_plan.next_seq``) and
also a read-only mapping of the server's JSON (``result["activePlan"]["nextSeq"]``): indexing gives
the JSON value as the server sent it (dicts and lists), so code written against the dict answers
of version 0.1 keeps working. ``result.raw`` is that JSON. Fields a server does not send are None.
Costs (``cost``) are ``Decimal`` (USD, exact: the server sends them as decimal strings).
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Type, TypeVar, cast

JsonObject = Dict[str, Any]
T = TypeVar("T", bound="_Result")

_WORD = re.compile(r"_([a-z])")


def _camel(name: str) -> str:
    return _WORD.sub(lambda m: m.group(1).upper(), name)


class _Result(Mapping[str, Any]):
    """Attribute access to the typed fields, item access to the JSON."""

    raw: JsonObject
    _nested: Dict[str, Callable[[Any], Any]] = {}

    @classmethod
    def from_json(cls: Type[T], raw: JsonObject) -> T:
        kwargs: Dict[str, Any] = {}
        for f in dataclasses.fields(cast(Any, cls)):
            if f.name == "raw":
                continue
            value = raw.get(_camel(f.name))
            convert = cls._nested.get(f.name)
            if convert is not None and value is not None:
                value = convert(value)
            kwargs[f.name] = value
        return cls(raw=raw, **kwargs)  # type: ignore[call-arg]

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)


def _list_of(cls: Type[T]) -> Callable[[Any], List[T]]:
    return lambda items: [cls.from_json(item) for item in items]


@dataclass(frozen=True, eq=False)
class StepSpec(_Result):
    """A step as an edit replaced it (``StepChanges.replaced``)."""

    raw: JsonObject = field(repr=False)
    step_id: str
    agent_id: str
    task: str
    title: Optional[str]
    expected_output: Optional[str]
    depends_on: Optional[List[str]]


@dataclass(frozen=True, eq=False)
class StepChanges(_Result):
    """What an edit changed against the step list before it, by stepId; ``replaced``: the old specs of
    the steps it changed or removed (servers that do not send it: None)."""

    raw: JsonObject = field(repr=False)
    added: List[str]
    removed: List[str]
    changed: List[str]
    replaced: Optional[List[StepSpec]]
    _nested = {"replaced": _list_of(StepSpec)}


@dataclass(frozen=True, eq=False)
class Decision(_Result):
    """One approve / edit / reject decision of a plan's audit trail."""

    raw: JsonObject = field(repr=False)
    decision_id: str
    decision: str
    decided_by: Optional[str]
    feedback: Optional[str]
    edited_step_count: Optional[int]
    step_changes: Optional[StepChanges]
    at: str
    _nested = {"step_changes": StepChanges.from_json}


@dataclass(frozen=True, eq=False)
class PlanSummary(_Result):
    raw: JsonObject = field(repr=False)
    plan_id: str
    session_id: str
    query: str
    status: str
    approval_status: Optional[str]
    requires_approval: bool
    complexity: Optional[int]
    total_steps: int
    completed_steps: int
    failed_steps: int
    skipped_steps: int
    input_tokens: int
    output_tokens: int
    cost: Optional[Decimal]
    unpriced_steps: Optional[int]
    created_at: str
    completed_at: Optional[str]
    duration_ms: Optional[int]
    summary: Optional[str]
    failure_reason: Optional[str]
    _nested = {"cost": Decimal}


@dataclass(frozen=True, eq=False)
class ActivePlanStep(_Result):
    raw: JsonObject = field(repr=False)
    step_id: str
    index: int
    title: Optional[str]
    agent_id: str
    status: str


@dataclass(frozen=True, eq=False)
class ActivePlan(_Result):
    """A plan still planning or executing, with what a restarted executor needs: its steps and ``next_seq``."""

    raw: JsonObject = field(repr=False)
    plan_id: str
    session_id: str
    query: str
    status: str
    approval_status: Optional[str]
    requires_approval: bool
    complexity: Optional[int]
    total_steps: int
    completed_steps: int
    failed_steps: int
    skipped_steps: int
    input_tokens: int
    output_tokens: int
    cost: Optional[Decimal]
    unpriced_steps: Optional[int]
    created_at: str
    completed_at: Optional[str]
    duration_ms: Optional[int]
    summary: Optional[str]
    failure_reason: Optional[str]
    steps: List[ActivePlanStep]
    next_seq: int
    _nested = {"steps": _list_of(ActivePlanStep), "cost": Decimal}


@dataclass(frozen=True, eq=False)
class SessionActivePlan(_Result):
    """``active_plan()``: the session's newest unfinished plan, or None when it has none."""

    raw: JsonObject = field(repr=False)
    session_id: str
    active_plan: Optional[ActivePlan]
    other_active_plan_ids: List[str]
    _nested = {"active_plan": ActivePlan.from_json}


@dataclass(frozen=True, eq=False)
class SessionHistory(_Result):
    """``history()``: the session's finished plans, newest first."""

    raw: JsonObject = field(repr=False)
    session_id: str
    plans: List[PlanSummary]
    cost: Optional[Decimal]
    unpriced_steps: Optional[int]
    _nested = {"plans": _list_of(PlanSummary), "cost": Decimal}


@dataclass(frozen=True, eq=False)
class PlanPage(_Result):
    """``plans()``: one page of a session's plans, newest first; ``total`` counts every page."""

    raw: JsonObject = field(repr=False)
    total: int
    limit: int
    offset: int
    plans: List[PlanSummary]
    _nested = {"plans": _list_of(PlanSummary)}


@dataclass(frozen=True, eq=False)
class StepView(_Result):
    raw: JsonObject = field(repr=False)
    step_id: str
    index: int
    title: Optional[str]
    agent_id: str
    task: str
    expected_output: Optional[str]
    depends_on: List[str]
    status: str
    model: Optional[str]
    input_tokens: int
    output_tokens: int
    cost: Optional[Decimal]
    cost_source: Optional[str]
    price_ref: Optional[str]
    started_at: Optional[str]
    completed_at: Optional[str]
    duration_ms: Optional[int]
    result: Optional[str]
    error: Optional[str]
    has_output: bool
    _nested = {"cost": Decimal}


@dataclass(frozen=True, eq=False)
class Handoff(_Result):
    raw: JsonObject = field(repr=False)
    handoff_id: str
    step_id: Optional[str]
    from_agent_id: str
    to_agent_id: str
    reason: str
    explanation: Optional[str]
    at: str


@dataclass(frozen=True, eq=False)
class Checkpoint(_Result):
    raw: JsonObject = field(repr=False)
    checkpoint_id: str
    layer: int
    at: str


@dataclass(frozen=True, eq=False)
class TimelineEntry(_Result):
    raw: JsonObject = field(repr=False)
    at: Optional[str]
    kind: str
    step_id: Optional[str]
    step_index: Optional[int]
    agent_id: Optional[str]
    input_tokens: Optional[int]
    output_tokens: Optional[int]
    cost: Optional[Decimal]
    duration_ms: Optional[int]
    error: Optional[str]
    detail: str
    _nested = {"cost": Decimal}


@dataclass(frozen=True, eq=False)
class PlanTimeline(_Result):
    """``plan()``: everything stored about one plan, and its timeline."""

    raw: JsonObject = field(repr=False)
    plan: PlanSummary
    steps: List[StepView]
    handoffs: List[Handoff]
    decisions: List[Decision]
    checkpoints: List[Checkpoint]
    timeline: List[TimelineEntry]
    _nested = {
        "plan": PlanSummary.from_json,
        "steps": _list_of(StepView),
        "handoffs": _list_of(Handoff),
        "decisions": _list_of(Decision),
        "checkpoints": _list_of(Checkpoint),
        "timeline": _list_of(TimelineEntry),
    }


@dataclass(frozen=True, eq=False)
class ResumeCheckpoint(_Result):
    raw: JsonObject = field(repr=False)
    checkpoint_id: str
    layer: int
    state: Any
    at: str


@dataclass(frozen=True, eq=False)
class ResumeStep(_Result):
    raw: JsonObject = field(repr=False)
    step_id: str
    index: int
    agent_id: str
    title: Optional[str]
    task: str
    depends_on: List[str]
    status: str


@dataclass(frozen=True, eq=False)
class LayerProgress(_Result):
    raw: JsonObject = field(repr=False)
    layer: int
    steps: int
    completed: int
    failed: int
    skipped: int
    unfinished: int


@dataclass(frozen=True, eq=False)
class ResumePoint(_Result):
    """``resume_point()``: where a workflow continues. ``resumable`` False: ``reason`` says why, and
    only ``status``, ``expires_at`` and ``next_seq`` are set besides it."""

    raw: JsonObject = field(repr=False)
    workflow_id: str
    resumable: bool
    status: Optional[str]
    reason: Optional[str]
    dag: Optional[JsonObject]
    intent: Optional[str]
    expires_at: Optional[str]
    latest_checkpoint: Optional[ResumeCheckpoint]
    last_completed_layer: Optional[int]
    next_layer: Optional[int]
    next_steps: Optional[List[ResumeStep]]
    layers: Optional[List[LayerProgress]]
    next_seq: int
    _nested = {
        "latest_checkpoint": ResumeCheckpoint.from_json,
        "next_steps": _list_of(ResumeStep),
        "layers": _list_of(LayerProgress),
    }


@dataclass(frozen=True, eq=False)
class EventStatus(_Result):
    """``events_status()``: where each event id stands. ``applied``: in its plan's rows (reads show it);
    ``waiting``: stored, behind a missing seq; ``refused``: dead-lettered by the worker (its seq voided);
    ``unknown``: not stored (yet)."""

    raw: JsonObject = field(repr=False)
    applied: List[str]
    waiting: List[str]
    refused: List[str]
    unknown: List[str]


@dataclass(frozen=True, eq=False)
class ForkOutcome(_Result):
    """``fork_plan()`` / ``replay_plan()``: the new plan. ``layer``: the first layer it runs (earlier ones
    are its parent's, ``inherited_steps`` of its ``steps``); its executor continues it from ``next_seq``
    with ``next_steps`` of ``next_layer``, as after a restart."""

    raw: JsonObject = field(repr=False)
    plan_id: str
    session_id: str
    kind: str
    parent_plan_id: str
    layer: int
    checkpoint_id: Optional[str]
    steps: int
    inherited_steps: int
    changed_steps: List[str]
    added_steps: List[str]
    next_layer: int
    next_steps: List[str]
    next_seq: int


@dataclass(frozen=True, eq=False)
class LineageNode(_Result):
    """One plan of a fork tree; ``children``: its forks and replays, oldest first. ``kind`` (fork |
    replay), ``fork_layer`` and ``fork_checkpoint`` say how it came from ``parent_plan_id`` (None for a
    plan an executor created); ``retired_at``: when retention soft-deleted it; ``current``: the plan asked for."""

    raw: JsonObject = field(repr=False)
    plan_id: str
    session_id: str
    parent_plan_id: Optional[str]
    kind: Optional[str]
    fork_layer: Optional[int]
    fork_checkpoint: Optional[str]
    status: str
    created_at: str
    completed_at: Optional[str]
    retired_at: Optional[str]
    total_steps: int
    completed_steps: int
    failed_steps: int
    input_tokens: int
    output_tokens: int
    cost: Optional[Decimal]
    current: bool
    children: List["LineageNode"]

    def walk(self) -> Iterator["LineageNode"]:
        """This node, then every node below it, depth first, oldest first."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children or []))


LineageNode._nested = {"children": _list_of(LineageNode), "cost": Decimal}


@dataclass(frozen=True, eq=False)
class PlanLineage(_Result):
    """``plan_lineage()``: the fork tree a plan belongs to, from ``root`` (the oldest ancestor still
    stored); ``plans`` counts its nodes; ``truncated``: the server cut a tree too deep or too large."""

    raw: JsonObject = field(repr=False)
    plan_id: str
    root_id: str
    plans: int
    truncated: bool
    root: LineageNode
    _nested = {"root": LineageNode.from_json}

    def find(self, plan_id: str) -> Optional[LineageNode]:
        """The node of ``plan_id`` in the tree, or None."""
        return next((n for n in self.root.walk() if n.plan_id == plan_id), None)


@dataclass(frozen=True, eq=False)
class Approval(_Result):
    """An approval (``GET /v1/approvals/{id}``, a consume's answer). ``status``: pending (undecided, not
    expired), expired (undecided, past ``expires_at``), decided (see ``decision``: approve, edit or reject),
    consumed. After an edit, ``edited_args_digest`` is the digest of the arguments to run."""

    raw: JsonObject = field(repr=False)
    approval_id: str
    plan_id: str
    session_id: str
    step_id: str
    tool: Optional[str]
    args_digest: str
    expires_at: str
    assignee: Optional[str]
    reason: Optional[str]
    requested_at: str
    status: str
    decision: Optional[str]
    decided_by: Optional[str]
    feedback: Optional[str]
    edited_args_digest: Optional[str]
    decided_at: Optional[str]
    consumed_at: Optional[str]
    consumed_by: Optional[str]
    age_ms: int
