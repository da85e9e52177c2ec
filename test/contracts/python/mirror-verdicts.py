"""Reads events as JSON lines on stdin; prints the Python client's contract mirror verdict for each:
"1" (valid) or "0 <first violation>", one line per input, in order.

  python3 mirror-verdicts.py < corpus.jsonl
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "clients", "python"))
from plan_ledger._contract import check_event  # noqa: E402

out = []
for line in sys.stdin:
    value = json.loads(line)
    violations = check_event(value) if isinstance(value, dict) else ["(root) must be an object"]
    out.append("1" if not violations else f"0 {violations[0]}")
sys.stdout.write("\n".join(out) + "\n")
