"""Events as the caller builds them: the typed helpers (one event each), step specs, and the stamps
``publish()`` fills in (``specVersion``, ``eventId``, ``occurredAt``, the plan's next ``seq``)."""
from __future__ import annotations

import datetime
import random
import re
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from . import _contract_table as table
from ._contract import SPEC_VERSION, Violation

JsonObject = Dict[str, Any]


@dataclass(frozen=True)
class PublishResult:
    """What ``publish()`` says at once.

    ``ok`` True: the event is queued (memory, then the server or the journal) with ``event_id`` and
    ``seq``. ``ok`` False, ``reason``:

    - ``invalid``: the contract refuses it, or it holds a value JSON cannot (``violations`` name each
      field); it takes no seq, so its plan's later events are not held back;
    - ``dropped``: the in-memory buffer is full (``max_buffered``); it takes no seq;
    - ``closed``: published after ``close()``.
    """

    ok: bool
    event_id: Optional[str]
    seq: Optional[int]
    reason: Optional[str] = None
    violations: Tuple[Violation, ...] = ()


@dataclass(frozen=True)
class Plan:
    """The plan an event belongs to, as the typed helpers take it."""

    plan_id: str
    session_id: str


def _snake(name: str) -> str:
    """``stepId`` -> ``step_id``: the Python spelling of a contract field."""
    return re.sub(r"(?<!^)([A-Z])", lambda m: "_" + m.group(1).lower(), name)


# the snake_case spelling of each step spec field the contract declares in camelCase
_STEP_KEYS = {_snake(str(f[0])): str(f[0]) for f in table.SHAPES["StepSpec"] if _snake(str(f[0])) != f[0]}


def _step_dict(step: Any) -> Any:
    """A step spec in the contract's camelCase: ``step_id`` -> ``stepId`` and so on; None values left out.
    A key given in both spellings keeps its snake_case twin, which the contract then refuses."""
    if isinstance(step, StepInput):
        step = step.as_dict()
    if not isinstance(step, Mapping):
        return step
    out: JsonObject = {}
    for key, value in step.items():
        if value is None:
            continue
        camel = _STEP_KEYS.get(key, key) if isinstance(key, str) else key
        if camel != key and (camel in step or camel in out):
            camel = key
        out[camel] = list(value) if camel == "dependsOn" and isinstance(value, (tuple, list)) else value
    return out


def _steps(steps: Optional[Iterable[Any]]) -> Optional[List[Any]]:
    if steps is None:
        return None
    if isinstance(steps, (str, bytes, Mapping)) or not isinstance(steps, Iterable):
        return steps  # type: ignore[return-value]  # the contract says what is wrong with it
    return [_step_dict(s) for s in steps]


@dataclass(frozen=True)
class StepInput:
    """A step spec for ``plan_created`` / ``plan_decision`` (dicts in camelCase or snake_case work too)."""

    step_id: str
    index: int
    agent_id: str
    task: str
    title: Optional[str] = None
    expected_output: Optional[str] = None
    depends_on: Optional[Sequence[str]] = None

    def as_dict(self) -> JsonObject:
        out: JsonObject = {"stepId": self.step_id, "index": self.index, "agentId": self.agent_id, "task": self.task}
        if self.title is not None:
            out["title"] = self.title
        if self.expected_output is not None:
            out["expectedOutput"] = self.expected_output
        if self.depends_on is not None:
            out["dependsOn"] = list(self.depends_on)
        return out


class _EventHelpers:
    """The typed helpers, shared by the threaded and the asyncio client: each builds one event and publishes it."""

    def publish(self, event: Mapping[str, Any]) -> PublishResult:  # pragma: no cover - overridden
        raise NotImplementedError

    def _typed(
        self, type_: str, plan: Plan, payload: JsonObject, seq: Optional[int], event_id: Optional[str]
    ) -> PublishResult:
        event: JsonObject = {
            "type": type_,
            "planId": plan.plan_id,
            "sessionId": plan.session_id,
            "payload": {k: v for k, v in payload.items() if v is not None},
        }
        if seq is not None:
            event["seq"] = seq
        if event_id is not None:
            event["eventId"] = event_id
        return self.publish(event)

    def plan_created(
        self,
        plan: Plan,
        query: str,
        steps: Iterable[Any],
        requires_approval: Optional[bool] = None,
        complexity: Optional[int] = None,
        seq: Optional[int] = None,
        event_id: Optional[str] = None,
    ) -> PublishResult:
        """``steps``: ``StepInput`` or dicts
        ``{"stepId", "index", "agentId", "task", "title"?, "expectedOutput"?, "dependsOn"?}``
        (snake_case keys such as ``step_id``, ``agent_id``, ``depends_on`` are accepted too)."""
        return self._typed(
            "plan.created",
            plan,
            {"query": query, "steps": _steps(steps), "requiresApproval": requires_approval, "complexity": complexity},
            seq,
            event_id,
        )

    def plan_decision(
        self,
        plan: Plan,
        decision: str,
        steps: Optional[Iterable[Any]] = None,
        feedback: Optional[str] = None,
        decided_by: Optional[str] = None,
        seq: Optional[int] = None,
        event_id: Optional[str] = None,
    ) -> PublishResult:
        """``decision``: approve | edit (with the full new ``steps``) | reject."""
        return self._typed(
            "plan.decision",
            plan,
            {"decision": decision, "steps": _steps(steps), "feedback": feedback, "decidedBy": decided_by},
            seq,
            event_id,
        )

    def step_started(
        self, plan: Plan, step_id: str, agent_id: Optional[str] = None, seq: Optional[int] = None
    ) -> PublishResult:
        return self._typed("step.started", plan, {"stepId": step_id, "agentId": agent_id}, seq, None)

    def step_completed(
        self,
        plan: Plan,
        step_id: str,
        input_tokens: int,
        output_tokens: int,
        result: Optional[str] = None,
        output_content: Optional[str] = None,
        model: Optional[str] = None,
        seq: Optional[int] = None,
        *,
        provider: Optional[str] = None,
        cache_read_tokens: Optional[int] = None,
        cache_write_tokens: Optional[int] = None,
        reasoning_tokens: Optional[int] = None,
        reported_cost: Optional[str] = None,
    ) -> PublishResult:
        """``input_tokens`` counts cache reads and writes too, ``output_tokens`` reasoning too; ``reported_cost``
        (USD, a decimal string such as ``"0.0123"``) is the provider's own figure and wins over any price."""
        payload = {
            "stepId": step_id,
            "inputTokens": input_tokens,
            "outputTokens": output_tokens,
            "result": result,
            "outputContent": output_content,
            "model": model,
        }
        return self._typed(
            "step.completed",
            plan,
            {**payload, **_usage(provider, cache_read_tokens, cache_write_tokens, reasoning_tokens, reported_cost)},
            seq,
            None,
        )

    def step_failed(
        self,
        plan: Plan,
        step_id: str,
        error: str,
        input_tokens: Optional[int] = None,
        output_tokens: Optional[int] = None,
        model: Optional[str] = None,
        seq: Optional[int] = None,
        *,
        provider: Optional[str] = None,
        cache_read_tokens: Optional[int] = None,
        cache_write_tokens: Optional[int] = None,
        reasoning_tokens: Optional[int] = None,
        reported_cost: Optional[str] = None,
    ) -> PublishResult:
        payload = {
            "stepId": step_id,
            "error": error,
            "inputTokens": input_tokens,
            "outputTokens": output_tokens,
            "model": model,
        }
        return self._typed(
            "step.failed",
            plan,
            {**payload, **_usage(provider, cache_read_tokens, cache_write_tokens, reasoning_tokens, reported_cost)},
            seq,
            None,
        )

    def step_skipped(
        self, plan: Plan, step_id: str, reason: Optional[str] = None, seq: Optional[int] = None
    ) -> PublishResult:
        return self._typed("step.skipped", plan, {"stepId": step_id, "reason": reason}, seq, None)

    def handoff_recorded(
        self,
        plan: Plan,
        handoff_id: str,
        from_agent_id: str,
        to_agent_id: str,
        reason: str,
        step_id: Optional[str] = None,
        explanation: Optional[str] = None,
        seq: Optional[int] = None,
    ) -> PublishResult:
        return self._typed(
            "handoff.recorded",
            plan,
            {
                "handoffId": handoff_id,
                "fromAgentId": from_agent_id,
                "toAgentId": to_agent_id,
                "reason": reason,
                "stepId": step_id,
                "explanation": explanation,
            },
            seq,
            None,
        )

    def checkpoint_saved(
        self, plan: Plan, checkpoint_id: str, layer: int, state: JsonObject, seq: Optional[int] = None
    ) -> PublishResult:
        return self._typed(
            "checkpoint.saved", plan, {"checkpointId": checkpoint_id, "layer": layer, "state": state}, seq, None
        )

    def plan_finalized(
        self,
        plan: Plan,
        status: str,
        summary: Optional[str] = None,
        failure_reason: Optional[str] = None,
        seq: Optional[int] = None,
    ) -> PublishResult:
        """``status``: completed | failed | cancelled."""
        return self._typed(
            "plan.finalized", plan, {"status": status, "summary": summary, "failureReason": failure_reason}, seq, None
        )


def _usage(
    provider: Optional[str],
    cache_read: Optional[int],
    cache_write: Optional[int],
    reasoning: Optional[int],
    reported_cost: Optional[str],
) -> JsonObject:
    """The optional usage fields of step.completed / step.failed."""
    return {
        "provider": provider,
        "cacheReadTokens": cache_read,
        "cacheWriteTokens": cache_write,
        "reasoningTokens": reasoning,
        "reportedCost": reported_cost,
    }


# ---------------------------------------------------------------- stamps


class Clock:
    """``now()``: ISO-8601 UTC with milliseconds; the text is reused within one millisecond (formatting
    costs more than reading the clock)."""

    def __init__(self) -> None:
        self._last: Tuple[int, str] = (-1, "")

    def now(self) -> str:
        ms = time.time_ns() // 1_000_000
        last = self._last
        if ms != last[0]:
            last = (
                ms,
                datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
                .isoformat(timespec="milliseconds")
                .replace("+00:00", "Z"),
            )
            self._last = last
        return last[1]


def stamp_event(e: JsonObject, clock: Clock) -> bool:
    """Fills in the ``specVersion``, ``eventId`` and ``occurredAt`` the event leaves out. True when it
    left out all three (the contract then need not check them)."""
    own = 0
    if "specVersion" not in e:
        e["specVersion"] = SPEC_VERSION
        own += 1
    if "eventId" not in e:
        e["eventId"] = _uuid7()
        own += 1
    if "occurredAt" not in e:
        e["occurredAt"] = clock.now()
        own += 1
    return own == 3


class PlanSeqs:
    """Each plan's next ``seq`` in this process (the caller holds a lock around ``take`` and
    ``continue_from``). A finished plan is forgotten; past ``max_plans`` the least recently used plan is."""

    def __init__(self, max_plans: int) -> None:
        self._next: Dict[str, int] = {}  # dict order is the LRU order
        self._last_plan: Optional[str] = None
        self._max_plans = max_plans

    def next(self, plan_id: Any) -> int:
        """The seq the plan's next event takes (0 for a plan id that is not a string)."""
        return self._next.get(plan_id, 0) if type(plan_id) is str else 0

    def take(self, plan_id: str, seq: Any, type_: str) -> None:
        """The event was accepted: its seq is taken."""
        after = int(seq) + 1
        counters = self._next
        if type_ == "plan.finalized":
            counters.pop(plan_id, None)
            self._last_plan = None
        elif plan_id == self._last_plan:
            if counters.get(plan_id, 0) < after:
                counters[plan_id] = after
        else:
            counters[plan_id] = max(counters.pop(plan_id, 0), after)  # re-inserted: dict order is the LRU order
            self._last_plan = plan_id
            if len(counters) > self._max_plans:
                del counters[next(iter(counters))]

    def continue_from(self, plan_id: str, next_seq: int) -> None:
        self._next[plan_id] = max(self._next.pop(plan_id, 0), next_seq)
        self._last_plan = plan_id


_last_ms = -1
_counter = 0


def _uuid7() -> str:
    """A version 7 UUID (RFC 9562) as text: the Unix time in ms, a counter, 62 random bits.

    Ids stamped close together are neighbours in the server's ``event_id`` index, so a batch's
    inserts touch a few index pages instead of one random page each (as the TypeScript
    publisher's). Within one ms a 12-bit counter, started at a random value below 2048, keeps this
    process's ids in stamping order; past 4096 in one ms, or when the clock steps back, the time
    borrows the next ms. eventId needs uniqueness, not secrecy: the random bits come from
    ``random`` (seeded from os.urandom, reseeded in a forked child) instead of one ``os.urandom``
    system call per event.
    """
    global _last_ms, _counter
    ms = time.time_ns() // 1_000_000
    if ms > _last_ms:
        _last_ms = ms
        _counter = random.getrandbits(11)
    else:
        _counter += 1
        if _counter > 0xFFF:
            _last_ms += 1
            _counter = 0
    h = "%012x%04x%016x" % (_last_ms, 0x7000 | _counter, (0x2 << 62) | random.getrandbits(62))
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
