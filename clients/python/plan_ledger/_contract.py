"""The event contract's rules, as ``publish()`` applies them before an event takes its seq.

The rules are not written here: ``_contract_table.py`` is generated from the contract's declaration
(``src/contracts/declaration.ts``, ``npm run generate``), and this module interprets it into checks
once, at import. Messages are the contract's own wording: the path, then what is wrong with it.
``test/contracts/contract-corpus.test.ts`` runs a corpus of valid and broken events through
``check_event`` and through the server's contract and requires the same verdicts and messages.

A refusal names every rule the event breaks, the first of each field, as the server's does: a NUL
character first (in the value, or in the strings of a value of the wrong kind), then the field's
other rules, and the event's size beside them.

What the server checks and ``check_event`` leaves to others: the step graph (unique ids, known
dependencies, no cycle; the server refuses such an event and voids its seq), lone surrogates (the
encoder, in ``publish()``), the size of an event that breaks no other rule (``publish()`` measures
the bytes it sends), and lengths in UTF-16 units (counted here in code points: they differ only for
characters beyond U+FFFF).

Python values that JSON cannot hold (``datetime``, ``set``, ``bytes``, ``Decimal``, NaN, a key that
is not a ``str``, ...) are reported as unencodable, with the field path, instead of being converted.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, cast

from . import _contract_table as table

SPEC_VERSION: int = table.SPEC_VERSION
MAX_EVENT_BYTES: int = table.LIMITS["maxEventBytes"]
MAX_STATE_DEPTH: int = table.LIMITS["maxStateDepth"]
_MESSAGES: Dict[str, str] = table.MESSAGES


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


def _say(name: str, **values: Any) -> str:
    """The contract's predicate ``name`` with its ``{placeholders}`` filled in."""
    return re.sub(r"\{(\w+)\}", lambda m: str(values[m.group(1)]), _MESSAGES[name])


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
    """A rule failed: say so, or say that the value is not JSON at all when that is the reason. As
    the contract's raw-input guard does before any field rule, a NUL character is named first: in
    the value itself instead of the rule, or in the strings of a list or object beside it."""
    problem = not_json(value)
    path = child_path(parent, key)
    if problem is not None:
        out.append(Violation(path, f"{_label(path)}: {problem}", True))
        return
    if isinstance(value, str) and "\x00" in value:
        out.append(Violation(path, f"{_label(path)} {_NUL_RULE}"))
        return
    if isinstance(value, (dict, list, tuple)):
        _guard_walk(value, path, out)
    out.append(Violation(path, f"{_label(path)} {predicate}"))


def _guard_walk(value: Any, path: str, out: List[Violation]) -> None:
    """In a value the rules refuse anyway, what the contract's raw-input guard names at its own
    path: a NUL character in a string, a key that names a built-in object property. Up to 20, and
    no deeper than MAX_STATE_DEPTH (what is refused is refused; this only names more of it)."""
    stack: List[Tuple[Any, str, int]] = [(value, path, 0)]
    found = 0
    while stack and found < 20:
        node, at, depth = stack.pop()
        if isinstance(node, str):
            if "\x00" in node:
                out.append(Violation(at, f"{_label(at)} {_NUL_RULE}"))
                found += 1
        elif depth < MAX_STATE_DEPTH and isinstance(node, dict):
            for k, child in reversed(list(node.items())):
                if isinstance(k, str) and k in table.FORBIDDEN_KEYS:
                    _report(out, at, k, _MESSAGES["forbiddenKey"])
                    found += 1
                else:
                    stack.append((child, child_path(at, k), depth + 1))
        elif depth < MAX_STATE_DEPTH and isinstance(node, (list, tuple)):
            for i in range(len(node) - 1, -1, -1):
                stack.append((node[i], child_path(at, i), depth + 1))


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


def _is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple))


# ----------------------------------------------------------------------------- kinds
# A rule checks one present value found at parent + key and appends what is wrong to ``out``.

Rule = Callable[[Any, str, Any, List[Violation]], None]
Spec = Dict[str, Tuple[bool, Rule]]


def _pattern(name: str) -> Callable[[str], Any]:
    return re.compile(table.PATTERNS[name], re.ASCII).fullmatch


_EXTERNAL_ID = _pattern("externalId")
_UUID = _pattern("uuid")
_TIMESTAMP = _pattern("utcTimestamp")
_DECIMAL_AMOUNT = _pattern("decimalAmount")
_DAYS = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_MUST_BE_STRING = _MESSAGES["mustBeString"]
_NUL_RULE = _MESSAGES["containsNul"]
_TIMESTAMP_RANGE = _say("timestampRange", earliest=table.EARLIEST_TIMESTAMP, latest=table.LATEST_TIMESTAMP)


def timestamp_problem(value: str) -> Optional[str]:
    """What is wrong with a timestamp string (the pattern, a real calendar day, the range every
    database stores), or None."""
    m = _TIMESTAMP(value)
    if m is None:
        return _MESSAGES["timestampFormat"]
    year, month, day = int(m[1]), int(m[2]), int(m[3])
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if day > (29 if month == 2 and leap else _DAYS[month]):
        return _MESSAGES["timestampFormat"]
    return _TIMESTAMP_RANGE if year < table.EARLIEST_YEAR else None


def timestamp_ok(value: str) -> bool:
    """A timestamp the contract accepts: ISO-8601 in UTC, a real calendar day, a year from 1000."""
    return timestamp_problem(value) is None


def _text(min_len: int, max_len: int) -> Rule:
    """A string of ``min_len`` to ``max_len`` characters without U+0000."""
    length = _say("textLength", min=min_len, max=max_len) if min_len > 0 else _say("textMax", max=max_len)

    def rule(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
        if not isinstance(value, str):
            return _report_value(out, parent, key, value, _MUST_BE_STRING)
        if "\x00" in value:
            return _report(out, parent, key, _NUL_RULE)
        if not min_len <= len(value) <= max_len:
            _report(out, parent, key, length)

    return rule


def _long_text(non_empty: bool, limit: str) -> Rule:
    """Free text, at most the limit's characters (and not empty when ``non_empty``), without U+0000."""
    max_len = table.LIMITS[limit]
    too_long = _say("textMax", max=max_len)

    def rule(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
        if not isinstance(value, str):
            return _report_value(out, parent, key, value, _MUST_BE_STRING)
        if "\x00" in value:
            return _report(out, parent, key, _NUL_RULE)
        if non_empty and not value:
            _report(out, parent, key, _MESSAGES["notEmpty"])
        if len(value) > max_len:
            _report(out, parent, key, too_long)

    return rule


def _string_of(match: Callable[[str], Any], predicate: str) -> Rule:
    def rule(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
        if not isinstance(value, str):
            return _report_value(out, parent, key, value, _MUST_BE_STRING)
        if not match(value):
            _report_value(out, parent, key, value, predicate)

    return rule


def _utc_timestamp(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
    if not isinstance(value, str):
        return _report_value(out, parent, key, value, _MUST_BE_STRING)
    problem = timestamp_problem(value)
    if problem is not None:
        _report_value(out, parent, key, value, problem)


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


def _int(low: int, high: int) -> Rule:
    def rule(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
        if not is_integer(value):
            _report_value(out, parent, key, value, _MESSAGES["mustBeInteger"])
        elif value < low:
            _report(out, parent, key, _say("atLeast", min=low))
        elif value > high:
            _report(out, parent, key, _say("atMost", max=high))

    return rule


def _bool(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
    if not isinstance(value, bool):
        _report_value(out, parent, key, value, _MESSAGES["mustBeBoolean"])


def _one_of(values: Sequence[str]) -> Rule:
    allowed = frozenset(values)
    predicate = _say("oneOf", values=", ".join(values))

    def rule(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
        if not (isinstance(value, str) and value in allowed):
            _report_value(out, parent, key, value, predicate)

    return rule


def _exactly(expected: int, why: str) -> Rule:
    predicate = _say("exactly", value=expected, why=why)

    def rule(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
        if not (type(value) in (int, float) and value == expected):
            _report_value(out, parent, key, value, predicate)

    return rule


def _object(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
    if not isinstance(value, dict):
        _report_value(out, parent, key, value, _MESSAGES["mustBeObject"])


def check_object(obj: Mapping[Any, Any], spec: Spec, path: str, out: List[Violation]) -> None:
    """Required fields present, each present field by its rule, no field the spec does not name.
    ``None`` is a value (JSON null), not an absent field."""
    present = 0
    for name, (required, rule) in spec.items():
        if name in obj:
            present += 1
            rule(obj[name], path, name, out)
        elif required:
            _report(out, path, name, _MESSAGES["required"])
    if present != len(obj):
        for key in obj:
            if key not in spec:
                problem = _key_problem(key)
                if problem is None:
                    if key in table.FORBIDDEN_KEYS:
                        _report(out, path, key, _MESSAGES["forbiddenKey"])
                        continue
                    _guard_walk(obj[key], child_path(path, key), out)
                    _report(out, path, key, _MESSAGES["unknownField"])
                else:
                    out.append(Violation(child_path(path, key), f"{_label(path)}: {problem}", True))


def _nested(shape: str) -> Rule:
    def rule(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
        if not isinstance(value, dict):
            return _report_value(out, parent, key, value, _MESSAGES["mustBeObject"])
        check_object(value, _SHAPES[shape], child_path(parent, key), out)

    return rule


def _list(shape: str, limit: str) -> Rule:
    """A list of objects of one shape, at most the limit's items."""
    max_items = table.LIMITS[limit]
    too_many = _say("listMax", max=max_items)

    def rule(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
        if not _is_list(value):
            return _report_value(out, parent, key, value, _MESSAGES["mustBeArray"])
        if len(value) > max_items:
            return _report(out, parent, key, too_many)
        spec = _SHAPES[shape]
        list_path = None
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                list_path = list_path or child_path(parent, key)
                _report_value(out, list_path, i, item, _MESSAGES["mustBeObject"])
                continue
            before = len(out)
            check_object(item, spec, "", out)
            if len(out) > before:  # paths are built only for an item with violations
                del out[before:]
                list_path = list_path or child_path(parent, key)
                check_object(item, spec, child_path(list_path, i), out)

    return rule


def _external_ids(limit: str) -> Rule:
    """Distinct external ids, at most the limit's."""
    max_items = table.LIMITS[limit]
    too_many = _say("listMax", max=max_items)

    def rule(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
        if not _is_list(value):
            return _report_value(out, parent, key, value, _MESSAGES["mustBeArray"])
        if len(value) > max_items:
            return _report(out, parent, key, too_many)
        for i, item in enumerate(value):
            if not (isinstance(item, str) and _EXTERNAL_ID(item)):
                if not_json(item) is not None:  # said in json's words, at the item's own path
                    return _report_value(out, child_path(parent, key), i, item, "")
                _guard_walk(value, child_path(parent, key), out)
                return _report(out, parent, key, _MESSAGES["onlyExternalIds"])
        if len(set(value)) != len(value):
            _report(out, parent, key, _MESSAGES["noDuplicates"])

    return rule


def _json_state(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
    """Checkpoint state: an object of JSON values, no forbidden key, no NUL in a key or string, at
    most MAX_STATE_DEPTH deep."""
    if not isinstance(value, dict):
        return _report_value(out, parent, key, value, _MESSAGES["mustBeObject"])
    state_path = child_path(parent, key)
    start = len(out)
    stack: List[Tuple[Any, str, int]] = [(value, state_path, 1)]
    while stack and len(out) - start < 20:
        node, path, depth = stack.pop()
        if depth > MAX_STATE_DEPTH:
            del out[start:]
            return _report(out, parent, key, _say("tooDeep", max=MAX_STATE_DEPTH))
        items = node.items() if isinstance(node, dict) else enumerate(node)
        is_object = isinstance(node, dict)
        for k, child in items:
            if is_object:
                if not isinstance(k, str):
                    out.append(Violation(child_path(path, k), f"{_label(path)}: {_key_problem(k)}", True))
                    continue
                if k in table.FORBIDDEN_KEYS:
                    _report(out, path, k, _MESSAGES["forbiddenKey"])
                    continue
                if "\x00" in k:
                    _report(out, path, k, _MESSAGES["keyContainsNul"])
                    continue
            t = type(child)
            if t is str:
                if "\x00" in child:
                    _report(out, path, k, _NUL_RULE)
            elif t is int or t is bool or child is None:
                pass
            elif t is float:
                if not math.isfinite(child):
                    p = child_path(path, k)
                    out.append(Violation(p, f"{p}: Out of range float values are not JSON compliant: {child!r}", True))
            elif isinstance(child, (dict, list, tuple)):
                stack.append((child, child_path(path, k), depth + 1))
            elif isinstance(child, str):
                if "\x00" in child:
                    _report(out, path, k, _NUL_RULE)
            else:
                problem = not_json(child)
                if problem is not None:
                    p = child_path(path, k)
                    out.append(Violation(p, f"{p}: {problem}", True))


def _trusted(value: Any, parent: str, key: Any, out: List[Violation]) -> None:
    """A stamp the client made itself: valid by construction."""


# ----------------------------------------------------------------------------- the table, interpreted

_SHAPES: Dict[str, Spec] = {}


def _rule(kind: str, *args: Any) -> Rule:
    if kind == "text":
        return _text(args[0], args[1])
    if kind == "longText":
        return _long_text(args[0], args[1])
    if kind == "externalId":
        return _string_of(_EXTERNAL_ID, _MESSAGES["externalId"])
    if kind == "uuid":
        return _string_of(_UUID, _MESSAGES["uuid"])
    if kind == "utcTimestamp":
        return _utc_timestamp
    if kind == "int":
        return _int(args[0], args[1])
    if kind == "decimalAmount":
        return _string_of(_DECIMAL_AMOUNT, _MESSAGES["decimalAmount"])
    if kind == "bool":
        return _bool
    if kind in ("oneOf", "eventType"):
        return _one_of(args[0])
    if kind == "exactly":
        return _exactly(args[0], args[1])
    if kind == "payload":
        return _object
    if kind == "nested":
        return _nested(args[0])
    if kind == "list":
        return _list(args[0], args[1])
    if kind == "externalIds":
        return _external_ids(args[0])
    if kind == "jsonState":
        return _json_state
    raise ValueError(f"the contract's table has a kind this client does not know: {kind!r}")


def _spec(rows: Sequence[Tuple[Any, ...]]) -> Spec:
    return {name: (required, _rule(*kind)) for name, required, _stamp, *kind in rows}


for _name, _rows in table.SHAPES.items():
    _SHAPES[_name] = _spec(_rows)

PAYLOAD_SPECS: Dict[str, Spec] = {t: _spec(rows) for t, rows in table.PAYLOADS.items()}
ENVELOPE_SPEC: Spec = _spec(table.ENVELOPE)
_TYPE_FIELD = cast(str, next(row[0] for row in table.ENVELOPE if row[3] == "eventType"))
_PAYLOAD_FIELD = cast(str, next(row[0] for row in table.ENVELOPE if row[3] == "payload"))
#: the stamps the client makes from nothing when the caller leaves them out (the seq it also takes
#: from the caller or ``continue_plan``, so that one is always checked)
_OWN_STAMPS = tuple(row[0] for row in table.ENVELOPE if row[2] and row[3] in ("exactly", "uuid", "utcTimestamp"))
#: the envelope when the client stamped those itself
ENVELOPE_SPEC_OWN_STAMPS: Spec = {
    name: ((required, _trusted) if name in _OWN_STAMPS else (required, rule))
    for name, (required, rule) in ENVELOPE_SPEC.items()
}


def _check_rules(type_: str, payload: Mapping[Any, Any], out: List[Violation]) -> None:
    """The payload's rules across fields that the client applies: a field present only when another
    has a value (the step graph is left to the server)."""
    for rule in table.RULES.get(type_, ()):
        if rule[0] != "onlyWhen":
            continue
        field, when, is_, noun = cast(Tuple[str, str, str], rule[1:4]) + (cast(str, rule[5]),)
        min_items = cast(int, rule[4])
        path = child_path(_PAYLOAD_FIELD, field)
        condition = payload.get(when)
        if condition == is_ and isinstance(condition, str):
            if field not in payload:
                out.append(Violation(path, f"{path} {_say('requiredWhen', when=when, **{'is': is_})}"))
            elif _is_list(payload[field]) and len(payload[field]) < min_items:
                predicate = _say("minItemsWhen", min=min_items, noun=noun, when=when, **{"is": is_})
                out.append(Violation(path, f"{path} {predicate}"))
        elif field in payload and isinstance(condition, str) and condition in _other_values(type_, when, is_):
            out.append(Violation(path, f"{path} {_say('absentUnless', when=when, **{'is': is_})}"))


def _other_values(type_: str, when: str, is_: str) -> Tuple[str, ...]:
    for name, _required, _stamp, kind, *args in table.PAYLOADS[type_]:
        if name == when and kind == "oneOf":
            return tuple(v for v in cast(Sequence[str], args[0]) if v != is_)
    return ()


def check_event(event: Mapping[Any, Any], own_stamps: bool = False) -> List[Violation]:
    """Every rule the event breaks, the first of each field (empty: valid). ``event`` must be a dict
    with all its stamps; ``own_stamps``: its specVersion, eventId and occurredAt were made by the
    client (not checked). A refused event's size is named too when it is over the contract's (a
    valid event's size is ``publish()``'s to measure, on the bytes it sends)."""
    out: List[Violation] = []
    _check_fields(event, own_stamps, out)
    if not out:
        return out
    size = _size(event)
    if size is not None and size > MAX_EVENT_BYTES:
        out.append(size_violation())
    return _first_of_each_field(out)


def _check_fields(event: Mapping[Any, Any], own_stamps: bool, out: List[Violation]) -> None:
    check_object(event, ENVELOPE_SPEC_OWN_STAMPS if own_stamps else ENVELOPE_SPEC, "", out)
    payload = event.get(_PAYLOAD_FIELD)
    type_ = event.get(_TYPE_FIELD)
    if not isinstance(payload, dict) or not isinstance(type_, str):
        return
    spec = PAYLOAD_SPECS.get(type_)
    if spec is None:
        return
    check_object(payload, spec, _PAYLOAD_FIELD, out)
    _check_rules(type_, payload, out)


def size_violation() -> Violation:
    """The event is larger than the contract's MAX_EVENT_BYTES of UTF-8 JSON."""
    return Violation("", f"(root) {_say('eventBytes', max=MAX_EVENT_BYTES)}")


def _size(event: Mapping[Any, Any]) -> Optional[int]:
    """The event's size as ``publish()`` would send it (compact UTF-8 JSON), or None when it cannot
    be encoded (that is reported on its own)."""
    try:
        text = json.dumps(event, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return len(text.encode("utf-8"))
    except (TypeError, ValueError, RecursionError, UnicodeEncodeError):
        return None


def _first_of_each_field(violations: List[Violation]) -> List[Violation]:
    """One violation per path, the first found: the rules of a field are checked in order and the
    first one broken is the one to fix."""
    seen = set()
    out = []
    for v in violations:
        if v.path not in seen:
            seen.add(v.path)
            out.append(v)
    return out
