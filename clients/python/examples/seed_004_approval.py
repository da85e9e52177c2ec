"""Seed 004: an architect agent's plans are approved, edited or rejected, with an audit trail.

Three plans await a decision: one approved, one edited (the new step list replaces the old), one
rejected (cancelled, nothing runs). Each decision is read back from the plan's audit trail.
"""
from _common import client, wait_for
from plan_ledger import Plan

SESSION = "architect-session-004"
STEPS = [
    {"stepId": "schema", "index": 0, "agentId": "architect", "task": "Design the schema"},
    {"stepId": "api", "index": 1, "agentId": "coder", "task": "Build the API", "dependsOn": ["schema"]},
]
approved, edited, rejected = (Plan(f"plan-004-{name}", SESSION) for name in ("approved", "edited", "rejected"))

ledger = client("seed-004")
for plan in (approved, edited, rejected):
    ledger.plan_created(plan, query=f"Architecture for {plan.plan_id}", steps=STEPS, requires_approval=True)
ledger.plan_decision(approved, "approve", decided_by="alice", feedback="ship it")
ledger.plan_decision(
    edited,
    "edit",
    decided_by="bob",
    feedback="add tests",
    steps=STEPS
    + [
        {"stepId": "tests", "index": 2, "agentId": "tester", "task": "Write the tests", "dependsOn": ["api"]},
    ],
)
ledger.plan_decision(rejected, "reject", decided_by="carol", feedback="out of scope")
ledger.plan_finalized(rejected, "cancelled", summary="rejected by carol")
assert ledger.close(30)

reader = client("seed-004-read")


def trail(plan: Plan):
    view = reader.plan(plan.plan_id)
    return view if view["decisions"] else None


a, e, r = (wait_for(f"the decision on {p.plan_id}", lambda p=p: trail(p)) for p in (approved, edited, rejected))
wait_for("the rejected plan cancelled", lambda: reader.plan(rejected.plan_id)["plan"]["status"] == "cancelled")
r = reader.plan(rejected.plan_id)
assert [(d["decision"], d["decidedBy"], d["feedback"]) for d in a["decisions"]] == [("approve", "alice", "ship it")]
assert [(d["decision"], d["decidedBy"], d["editedStepCount"]) for d in e["decisions"]] == [("edit", "bob", 3)]
assert len(e["steps"]) == 3
assert [(d["decision"], d["decidedBy"]) for d in r["decisions"]] == [("reject", "carol")]
assert (
    a["plan"]["approvalStatus"] == "approved"
    and e["plan"]["approvalStatus"] == "edited"
    and r["plan"]["approvalStatus"] == "rejected"
), (a["plan"], e["plan"], r["plan"])
assert r["plan"]["status"] == "cancelled"
for view in (a, e, r):
    d = view["decisions"][0]
    print(
        f"{view['plan']['planId']}: {d['decision']} by {d['decidedBy']} at {d['at']} ({view['plan']['status']}, "
        f"{len(view['steps'])} steps)"
    )
reader.close(5)
