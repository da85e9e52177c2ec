"""Reads events as JSON lines on stdin; prints, one JSON line per input and in order, the violations
the Python client's ``check_event`` finds as ``[path, message]`` pairs (``[]``: valid).

  python3 check-events.py < corpus.jsonl
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "clients", "python"))
from plan_ledger._contract import check_event  # noqa: E402

out = []
for line in sys.stdin:
    value = json.loads(line)
    violations = check_event(value) if isinstance(value, dict) else []
    out.append(json.dumps([[v.path, v.message] for v in violations]))
sys.stdout.write("\n".join(out) + "\n")
