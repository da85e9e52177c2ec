"""The event contract's rules that JSON Schema states, as plain Python: a mirror of ``schemas/``.

``publish()`` runs ``check_event`` on every event before its seq is taken, so an event the schema
refuses never leaves a gap in its plan's seqs. The verdict is the schema's (draft 2020-12 as ajv
with ``ajv-formats`` applies it to the event after a JSON round trip):
``test/contracts/python-schema.agreement.test.ts`` runs the same corpus of valid and broken events
through ajv and through this module and requires the same verdict for every input.

Beyond the schema, two of the rules it lists in ``x-plan-ledger-also-checked`` are applied here
because they cost nothing more (``MAX_STATE_DEPTH`` bounds the walk of checkpoint state, which also
stops a state that contains itself) or are measured anyway (``MAX_EVENT_BYTES``, by the encoder).
The others (the step graph: unique ids, known dependencies, no cycle; lengths in UTF-16 units) are
left to the server, which refuses such an event and voids its seq.

Python values that JSON cannot hold (``datetime``, ``set``, ``bytes``, ``Decimal``, NaN, a key that
is not a ``str``, ...) are reported as unencodable, with the field path, instead of being converted.
Messages follow the contract's wording: the path, then what is wrong with it.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

SPEC_VERSION = 1
MAX_EVENT_BYTES = 1_048_576
MAX_STATE_DEPTH = 32
SQL_INT_MAX = 2_147_483_647
MAX_STEPS = 500
MAX_DEPENDS_ON = 100
MAX_LONG_TEXT = 200_000

EVENT_TYPES = (
    "plan.created",
    "plan.decision",
    "step.started",
    "step.completed",
    "step.failed",
    "step.skipped",
    "handoff.recorded",
    "checkpoint.saved",
    "plan.finalized",
)
DECISIONS = ("approve", "edit", "reject")
FINAL_STATUSES = ("completed", "failed", "cancelled")
ENVELOPE_FIELDS = ("specVersion", "eventId", "type", "planId", "sessionId", "seq", "occurredAt", "payload")


class Violation:
    """One broken rule: ``path`` (``payload.steps[2].agentId``; ``""`` is the event itself) and the
    full sentence ``message``, path included. ``unencodable`` marks a value JSON cannot hold."""

    __slots__ = ("path", "message", "unencodable")

    def __init__(self, path: str, message: str, unencodable: bool = False) -> None:
        self.path = path
        self.message = message
        self.unencodable = unencodable

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"Violation({self.path!r}, {self.message!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Violation) and (self.path, self.message) == (other.path, other.message)

    def __hash__(self) -> int:
        return hash((self.path, self.message))


# ----------------------------------------------------------------------------- paths

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z", re.ASCII)
_MAX_KEY_CHARS = 40


def child_path(parent: str, key: Any) -> str:
    """``parent.key``, ``parent[3]``, or ``parent["odd key"]`` (JSON-quoted), as the contract writes paths."""
    if isinstance(key, int) and not isinstance(key, bool):
        return f"{parent}[{key}]"
    if isinstance(key, str):
        if len(key) <= _MAX_KEY_CHARS and _IDENTIFIER.match(key):
            return f"{parent}.{key}" if parent else key
        shown = key if len(key) <= _MAX_KEY_CHARS else key[:_MAX_KEY_CHARS] + "..."
        return f"{parent}[{_quote(shown)}]"
    return f"{parent}[{_quote(repr(key))}]"


def _quote(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif code < 0x20 or code in (0x2028, 0x2029) or 0xD800 <= code <= 0xDFFF:
            out.append("\\u%04x" % code)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _label(path: str) -> str:
    return path if path else "(root)"


def _report(out: List[Violation], parent: str, key: Any, predicate: str) -> None:
    path = child_path(parent, key)
    out.append(Violation(path, f"{_label(path)} {predicate}"))


def _report_value(out: List[Violation], parent: str, key: Any, value: Any, predicate: str) -> None:
    """A rule failed: say so, or say that the value is not JSON at all when that is the reason."""
    problem = not_json(value)
    path = child_path(parent, key)
    if problem is None:
        out.append(Violation(path, f"{_label(path)} {predicate}"))
    else:
        out.append(Violation(path, f"{_label(path)}: {problem}", True))


def not_json(value: Any) -> Optional[str]:
    """Why ``value`` itself (not its contents) is not a JSON value, in ``json``'s words; None if it is one."""
    if value is None or isinstance(value, (str, bool, int, list, tuple, dict)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"Out of range float values are not JSON compliant: {value!r}"
    return f"Object of type {type(value).__name__} is not JSON serializable"


def _key_problem(key: Any) -> Optional[str]:
    if isinstance(key, str):
        return None
    return f"keys must be str, not {type(key).__name__}"


# ----------------------------------------------------------------------------- field rules
# A rule checks one present value found at parent + key and appends what is wrong to ``out``.

Rule = Callable[[Any, str, Any, List[Violation]], None]

_EXTERNAL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}\Z", re.ASCII).match
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z", re.ASCII).match
_TIMESTAMP = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2}(?:\.[0-9]{1,9})?)(?:Z|\+00:00)\Z", re.ASCII).match
_DAYS = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

MUST_BE_STRING = "must be a string"
EXTERNAL_ID_RULE = "must be an external id (1-64 letters, digits, '_', '.', ':' or '-', starting with a letter or digit)"
TIMESTAMP_RULE = "must be an ISO-8601 timestamp in UTC, e.g. 2024-05-01T12:00:00.000Z"
NUL_RULE = "must not contain the NUL character (U+0000): PostgreSQL cannot store it"


def text(min_len: int, max_len: int) -> Rule:
    """A string of ``min_len`` to ``max_len`` characters (code points, as the schema counts) without U+0000."""
    length = f"must be {min_len} to {max_len} characters long" if min_len > 0 else f"must be at most {max_len} characters long"

    def rule(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
        if not isinstance(value, str):
            return _report_value(out, parent, key, value, MUST_BE_STRING)
        if "\x00" in value:
            return _report(out, parent, key, NUL_RULE)
        if not min_len <= len(value) <= max_len:
            _report(out, parent, key, length)

    return rule


def long_text(non_empty: bool = False) -> Rule:
    return text(1 if non_empty else 0, MAX_LONG_TEXT)


def external_id(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
    if not isinstance(value, str):
        return _report_value(out, parent, key, value, MUST_BE_STRING)
    if not _EXTERNAL_ID(value):
        _report(out, parent, key, EXTERNAL_ID_RULE)


def uuid(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
    if not isinstance(value, str):
        return _report_value(out, parent, key, value, MUST_BE_STRING)
    if not _UUID(value):
        _report(out, parent, key, "must be a UUID")


def timestamp_ok(value: str) -> bool:
    """The schema's pattern (a year from 1000, no leap second) plus the ``date-time`` format (a
    real calendar day)."""
    m = _TIMESTAMP(value)
    if m is None:
        return False
    year, month, day, hour, minute = int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5])
    if year < 1000 or not 1 <= month <= 12:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= day <= (29 if month == 2 and leap else _DAYS[month]):
        return False
    return hour <= 23 and minute <= 59 and float(m[6]) < 60


def utc_timestamp(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
    if not isinstance(value, str):
        return _report_value(out, parent, key, value, MUST_BE_STRING)
    if not timestamp_ok(value):
        _report(out, parent, key, TIMESTAMP_RULE)


def is_integer(value: Any) -> bool:
    """A JSON integer: an int (not a bool), or a float with no fraction (JSON's 1.0 is the integer 1)."""
    t = type(value)
    if t is int:
        return True
    if t is bool:
        return False
    if isinstance(value, int):
        return not isinstance(value, bool)
    return isinstance(value, float) and value.is_integer()


def int_in_range(low: int, high: int) -> Rule:
    def rule(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
        if not is_integer(value):
            _report_value(out, parent, key, value, "must be an integer")
        elif value < low:
            _report(out, parent, key, f"must be at least {low}")
        elif value > high:
            _report(out, parent, key, f"must be at most {high}")

    return rule


def boolean(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
    if not isinstance(value, bool):
        _report_value(out, parent, key, value, "must be a boolean")


def one_of(values: Sequence[str]) -> Rule:
    allowed = frozenset(values)
    predicate = "must be one of: " + ", ".join(values)

    def rule(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
        if not (isinstance(value, str) and value in allowed):
            _report_value(out, parent, key, value, predicate)

    return rule


def _spec_version(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
    if not (type(value) in (int, float) and value == SPEC_VERSION):
        _report_value(out, parent, key, value, f"must be {SPEC_VERSION}, the only spec version this parser supports")


Spec = Dict[str, Tuple[bool, Rule]]


def check_object(obj: Mapping[Any, Any], spec: Spec, path: str, out: List[Violation]) -> None:
    """Required fields present, each present field by its rule, no field the spec does not name.
    ``None`` is a value (JSON null), not an absent field."""
    present = 0
    for name, (required, rule) in spec.items():
        if name in obj:
            present += 1
            rule(obj[name], path, name, out)
        elif required:
            _report(out, path, name, "is required")
    if present != len(obj):
        for key in obj:
            if key not in spec:
                problem = _key_problem(key)
                if problem is None:
                    _report(out, path, key, "is not an allowed field")
                else:
                    out.append(Violation(child_path(path, key), f"{_label(path)}: {problem}", True))


def _not_a_list(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
    _report_value(out, parent, key, value, "must be an array")


def _is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def external_id_list(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
    """dependsOn: unique external ids, at most MAX_DEPENDS_ON."""
    if not _is_list(value):
        return _not_a_list(value, parent, key, out)
    if len(value) > MAX_DEPENDS_ON:
        return _report(out, parent, key, f"must contain at most {MAX_DEPENDS_ON} items")
    path = None
    for i, item in enumerate(value):
        if not isinstance(item, str):
            path = path or child_path(parent, key)
            _report_value(out, path, i, item, MUST_BE_STRING)
        elif not _EXTERNAL_ID(item):
            path = path or child_path(parent, key)
            _report(out, path, i, EXTERNAL_ID_RULE)
    if path is None and len(set(value)) != len(value):
        _report(out, parent, key, "must not contain duplicates")


def _dict_of(obj: Any) -> bool:
    return isinstance(obj, dict)


def step_list(min_items: int = 0) -> Rule:
    """A list of step specs, at most MAX_STEPS (``min_items`` 1 for an edit)."""

    def rule(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
        if not _is_list(value):
            return _not_a_list(value, parent, key, out)
        if len(value) > MAX_STEPS:
            return _report(out, parent, key, f"must contain at most {MAX_STEPS} items")
        if len(value) < min_items:
            return _report(out, parent, key, f"must contain at least {min_items} item")
        list_path = None
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                list_path = list_path or child_path(parent, key)
                _report_value(out, list_path, i, item, "must be an object")
                continue
            before = len(out)
            check_object(item, STEP_SPEC, "", out)
            if len(out) > before:  # paths are built only for an item with violations
                del out[before:]
                list_path = list_path or child_path(parent, key)
                check_object(item, STEP_SPEC, child_path(list_path, i), out)

    return rule


def json_state(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
    """Checkpoint state: an object of JSON values, no NUL in a key or string, at most MAX_STATE_DEPTH deep."""
    if not isinstance(value, dict):
        return _report_value(out, parent, key, value, "must be an object")
    state_path = child_path(parent, key)
    start = len(out)
    stack: List[Tuple[Any, str, int]] = [(value, state_path, 1)]
    while stack and len(out) - start < 20:
        node, path, depth = stack.pop()
        if depth > MAX_STATE_DEPTH:
            del out[start:]
            return _report(out, parent, key, f"must not be nested more than {MAX_STATE_DEPTH} levels deep")
        items = node.items() if isinstance(node, dict) else enumerate(node)
        is_object = isinstance(node, dict)
        for k, child in items:
            if is_object:
                if not isinstance(k, str):
                    out.append(Violation(child_path(path, k), f"{_label(path)}: {_key_problem(k)}", True))
                    continue
                if "\x00" in k:
                    _report(out, path, k, "is a forbidden key (it contains the NUL character, U+0000, which PostgreSQL cannot store)")
                    continue
            t = type(child)
            if t is str:
                if "\x00" in child:
                    _report(out, path, k, NUL_RULE)
            elif t is int or t is bool or child is None:
                pass
            elif t is float:
                if not math.isfinite(child):
                    out.append(Violation(child_path(path, k), f"{child_path(path, k)}: Out of range float values are not JSON compliant: {child!r}", True))
            elif isinstance(child, (dict, list, tuple)):
                stack.append((child, child_path(path, k), depth + 1))
            elif isinstance(child, str):
                if "\x00" in child:
                    _report(out, path, k, NUL_RULE)
            elif isinstance(child, (int, float)):
                problem = not_json(child)
                if problem is not None:
                    p = child_path(path, k)
                    out.append(Violation(p, f"{p}: {problem}", True))
            else:
                p = child_path(path, k)
                out.append(Violation(p, f"{p}: {not_json(child)}", True))


STEP_SPEC: Spec = {
    "stepId": (True, external_id),
    "index": (True, int_in_range(0, 100_000)),
    "agentId": (True, text(1, 100)),
    "task": (True, long_text(non_empty=True)),
    "title": (False, text(0, 500)),
    "expectedOutput": (False, text(0, 50)),
    "dependsOn": (False, external_id_list),
}

_tokens = int_in_range(0, SQL_INT_MAX)

FORK_KINDS = ("fork", "replay")

FORK_ORIGIN: Spec = {
    "planId": (True, external_id),
    "kind": (True, one_of(FORK_KINDS)),
    "layer": (True, int_in_range(0, 100_000)),
    "checkpointId": (False, external_id),
}


def fork_origin(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
    """``forkOf`` of a fork or replay: the parent plan and the first layer the fork runs itself."""
    if not isinstance(value, dict):
        return _report_value(out, parent, key, value, "must be an object")
    check_object(value, FORK_ORIGIN, child_path(parent, key), out)

_DECIMAL_AMOUNT = re.compile(r"[0-9]{1,12}(\.[0-9]{1,12})?\Z", re.ASCII).match
DECIMAL_AMOUNT_RULE = 'must be a decimal string of at most 12 digits before and 12 after the point, e.g. "0.0123"'


def decimal_amount(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
    """An exact amount (a provider-reported cost) as a decimal string."""
    if not isinstance(value, str):
        return _report_value(out, parent, key, value, MUST_BE_STRING)
    if not _DECIMAL_AMOUNT(value):
        _report(out, parent, key, DECIMAL_AMOUNT_RULE)


# What a model call used and cost beyond input and output tokens (all optional).
_USAGE_FIELDS: Spec = {
    "provider": (False, text(1, 100)),
    "cacheReadTokens": (False, _tokens),
    "cacheWriteTokens": (False, _tokens),
    "reasoningTokens": (False, _tokens),
    "reportedCost": (False, decimal_amount),
}

PAYLOAD_SPECS: Dict[str, Spec] = {
    "plan.created": {
        "query": (True, long_text(non_empty=True)),
        "steps": (True, step_list()),
        "requiresApproval": (False, boolean),
        "complexity": (False, int_in_range(0, 100)),
        "forkOf": (False, fork_origin),
        "traceId": (False, external_id),
    },
    "plan.decision": {
        "decision": (True, one_of(DECISIONS)),
        "steps": (False, step_list()),
        "feedback": (False, long_text()),
        "decidedBy": (False, text(0, 200)),
    },
    "step.started": {"stepId": (True, external_id), "agentId": (False, text(1, 100))},
    "step.completed": {
        "stepId": (True, external_id),
        "result": (False, long_text()),
        "outputContent": (False, long_text()),
        "inputTokens": (True, _tokens),
        "outputTokens": (True, _tokens),
        "model": (False, text(1, 100)),
        **_USAGE_FIELDS,
    },
    "step.failed": {
        "stepId": (True, external_id),
        "error": (True, long_text()),
        "inputTokens": (False, _tokens),
        "outputTokens": (False, _tokens),
        "model": (False, text(1, 100)),
        **_USAGE_FIELDS,
    },
    "step.skipped": {"stepId": (True, external_id), "reason": (False, long_text())},
    "handoff.recorded": {
        "handoffId": (True, external_id),
        "stepId": (False, external_id),
        "fromAgentId": (True, text(1, 100)),
        "toAgentId": (True, text(1, 100)),
        "reason": (True, text(1, 50)),
        "explanation": (False, long_text()),
    },
    "checkpoint.saved": {"checkpointId": (True, external_id), "layer": (True, int_in_range(0, 100_000)), "state": (True, json_state)},
    "plan.finalized": {"status": (True, one_of(FINAL_STATUSES)), "summary": (False, long_text()), "failureReason": (False, long_text())},
}

_edit_steps = step_list(min_items=1)

ENVELOPE_SPEC: Spec = {
    "specVersion": (True, _spec_version),
    "eventId": (True, uuid),
    "type": (True, one_of(EVENT_TYPES)),
    "planId": (True, external_id),
    "sessionId": (True, external_id),
    "seq": (True, int_in_range(0, SQL_INT_MAX)),
    "occurredAt": (True, utc_timestamp),
    "payload": (True, lambda v, parent, key, out: None if isinstance(v, dict) else _report_value(out, parent, key, v, "must be an object")),
}


def _trusted(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
    """A stamp the client made itself (specVersion, eventId, occurredAt): valid by construction."""


#: the envelope when the client stamped specVersion, eventId and occurredAt itself
ENVELOPE_SPEC_OWN_STAMPS: Spec = dict(ENVELOPE_SPEC, specVersion=(True, _trusted), eventId=(True, _trusted), occurredAt=(True, _trusted))


def check_event(event: Mapping[Any, Any], own_stamps: bool = False) -> List[Violation]:
    """Every rule the event breaks (empty: valid). ``event`` must be a dict with all its stamps;
    ``own_stamps``: its specVersion, eventId and occurredAt were made by the client (not checked)."""
    out: List[Violation] = []
    check_object(event, ENVELOPE_SPEC_OWN_STAMPS if own_stamps else ENVELOPE_SPEC, "", out)
    payload = event.get("payload")
    type_ = event.get("type")
    if not isinstance(payload, dict) or not isinstance(type_, str):
        return out
    spec = PAYLOAD_SPECS.get(type_)
    if spec is None:
        return out
    check_object(payload, spec, "payload", out)
    if type_ == "plan.decision":
        decision = payload.get("decision")
        if decision == "edit" or "decision" not in payload:
            if "steps" not in payload:
                if "decision" in payload:
                    out.append(Violation("payload.steps", "payload.steps is required for an edit"))
            else:
                steps = payload["steps"]
                if _is_list(steps) and len(steps) == 0:
                    out.append(Violation("payload.steps", "payload.steps must contain at least 1 item for an edit"))
        elif "steps" in payload:
            out.append(Violation("payload.steps", "payload.steps must be absent unless decision is edit"))
    return out
