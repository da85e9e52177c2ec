"""The canonical JSON of a tool call's arguments and its digest (``argsDigest`` of ``approval.requested``).

Canonical JSON is RFC 8785 (JCS) for plain JSON values: object keys sorted by UTF-16 code units, no
whitespace, strings and numbers written as ECMAScript's ``JSON.stringify`` writes them, so this module
and the TypeScript ``argsDigest`` give the same digest (both are tested against one vector file).
"""
import hashlib
import json
import math
from typing import Any

__all__ = ["canonical_json", "args_digest"]


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value`` (dicts with str keys, lists, str, int, float, bool, None)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_json(v) for v in value) + "]"
    if isinstance(value, dict):
        for k in value:
            if not isinstance(k, str):
                raise TypeError(f"canonical JSON has only string keys, not {type(k).__name__}: {k!r}")
        keys = sorted(value, key=_utf16)
        return "{" + ",".join(_string(k) + ":" + canonical_json(value[k]) for k in keys) + "}"
    raise TypeError(f"canonical JSON has no {type(value).__name__}: arguments must be plain JSON")


def args_digest(args: Any) -> str:
    """SHA-256 of the UTF-8 canonical JSON of ``args``, as 64 lower-case hex digits."""
    return hashlib.sha256(canonical_json(args).encode("utf-8")).hexdigest()


def _string(s: str) -> str:
    # json.dumps without ensure_ascii escapes exactly what JSON.stringify escapes (", \\, \b \f \n \r \t
    # and the other controls as lower-case \u00xx); a lone surrogate cannot be encoded as UTF-8
    return json.dumps(s, ensure_ascii=False)


def _number(n: float) -> str:
    """ECMAScript Number::toString: the shortest digits that round-trip, in fixed or exponent form."""
    if isinstance(n, int) and abs(n) < 2**53:
        return str(n)
    f = float(n)
    if not math.isfinite(f):
        raise TypeError(f"canonical JSON has no {f}: arguments must be plain JSON")
    if f == 0:
        return "0"
    sign = "-" if f < 0 else ""
    digits, exponent = _shortest(abs(f))
    k = len(digits)
    point = exponent + k  # the position of the decimal point, counted from the first digit
    if k <= point <= 21:
        return sign + digits + "0" * (point - k)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * (-point) + digits
    e = point - 1
    mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
    return sign + mantissa + "e" + ("+" if e >= 0 else "-") + str(abs(e))


def _shortest(f: float) -> "tuple[str, int]":
    """The shortest round-trip digits of ``f`` (no leading or trailing zeros) and their power of ten."""
    mantissa, _, exp = repr(f).partition("e")
    whole, _, frac = mantissa.partition(".")
    if frac == "0":
        frac = ""
    digits = (whole + frac).lstrip("0")
    exponent = (int(exp) if exp else 0) - len(frac)
    stripped = digits.rstrip("0")
    return stripped, exponent + (len(digits) - len(stripped))


def _utf16(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")
