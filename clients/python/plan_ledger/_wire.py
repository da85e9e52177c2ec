"""Events as bytes: strict JSON (no NaN, no Infinity), UTF-8 (no lone surrogate), compact.

``encode`` runs in the caller's thread inside ``publish()``; when it fails, ``find_unencodable``
walks the event to name the fields that cannot be sent, with json's own wording.
"""
from __future__ import annotations

import json
import math
from typing import Any, List, Set

from ._contract import Violation, child_path

_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_encode_text = _ENCODER.encode

ENCODE_ERRORS = (TypeError, ValueError, RecursionError, UnicodeEncodeError)

_MAX_REPORTED = 10
_MAX_DEPTH = 200


def encode(event: Any) -> bytes:
    """The event as compact UTF-8 JSON. Raises one of ``ENCODE_ERRORS`` when it cannot be sent."""
    return _encode_text(event).encode("utf-8")


def _label(path: str) -> str:
    return path if path else "(root)"


def find_unencodable(value: Any) -> List[Violation]:
    """Each value (up to 10) of ``value`` that strict JSON or strict UTF-8 refuses, with its path."""
    out: List[Violation] = []
    _walk(value, "", out, set(), 0)
    return out


def _walk(value: Any, path: str, out: List[Violation], on_path: Set[int], depth: int) -> None:
    if len(out) >= _MAX_REPORTED:
        return
    if isinstance(value, str):
        problem = surrogate_problem(value)
        if problem:
            out.append(Violation(path, f"{_label(path)}: {problem}", True))
        return
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            out.append(
                Violation(path, f"{_label(path)}: Out of range float values are not JSON compliant: {value!r}", True)
            )
        return
    if isinstance(value, (list, tuple, dict)):
        if id(value) in on_path:
            out.append(Violation(path, f"{_label(path)}: Circular reference detected", True))
            return
        if depth >= _MAX_DEPTH:
            out.append(Violation(path, f"{_label(path)}: nested more than {_MAX_DEPTH} levels deep", True))
            return
        on_path.add(id(value))
        if isinstance(value, dict):
            for key, child in value.items():
                child_at = child_path(path, key)
                if not isinstance(key, str):
                    out.append(Violation(child_at, f"{_label(path)}: keys must be str, not {type(key).__name__}", True))
                    continue
                problem = surrogate_problem(key)
                if problem:
                    out.append(Violation(child_at, f"{_label(path)}: the key {child_at[len(path):]} {problem}", True))
                    continue
                _walk(child, child_at, out, on_path, depth + 1)
        else:
            for i, child in enumerate(value):
                _walk(child, child_path(path, i), out, on_path, depth + 1)
        on_path.discard(id(value))
        return
    out.append(Violation(path, f"{_label(path)}: Object of type {type(value).__name__} is not JSON serializable", True))


def surrogate_problem(text: str) -> str:
    """Why ``text`` has no UTF-8 form (a lone surrogate, as ``surrogateescape`` decoding leaves), or ''."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return (
            f"contains the lone surrogate U+{ord(text[err.start]):04X} at index {err.start}, which strict UTF-8 "
            "cannot encode "
            "(text decoded with errors='surrogateescape'? decode it with errors='replace', or send it another way)"
        )
    return ""
