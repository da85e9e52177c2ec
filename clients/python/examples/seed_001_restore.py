"""Seed 001: a chat session restores its active plan after a restart.

The first "process" creates a plan for the session and runs its first step, then stops. The second
one knows only the session id: it asks the ledger for the session's active plan, redraws its
progress, continues the plan from ``nextSeq`` and finishes it; the plan then shows in the history.
"""
from _common import client, wait_for
from plan_ledger import Plan

SESSION = "chat-session-001"
PLAN = Plan("plan-001-bibliography", SESSION)

# --- before the restart
ledger = client("seed-001-before")
ledger.plan_created(
    PLAN,
    query="Add a bibliography section",
    steps=[
        {
            "stepId": "read",
            "index": 0,
            "agentId": "reader",
            "task": "Read the existing structure",
            "title": "Read structure",
        },
        {
            "stepId": "write",
            "index": 1,
            "agentId": "writer",
            "task": "Write the section",
            "title": "Write section",
            "dependsOn": ["read"],
        },
    ],
)
ledger.step_started(PLAN, "read")
ledger.step_completed(PLAN, "read", input_tokens=100, output_tokens=50, output_content="structure notes")
assert ledger.close(30), "events not delivered"

# --- after the restart: only the session id is known
ledger = client("seed-001-after")
active = wait_for(
    "the active plan",
    lambda: (lambda a: a if a["activePlan"] and a["activePlan"]["completedSteps"] == 1 else None)(
        ledger.active_plan(SESSION)
    ),
)["activePlan"]
print(f"restored {active['planId']}: {active['query']} ({active['status']})")
for step in active["steps"]:
    print(f"  #{step['index']} {step['title']}: {step['status']}")
assert [s["status"] for s in active["steps"]] == ["completed", "pending"]
assert active["nextSeq"] == 3

ledger.continue_plan(active["planId"], active["nextSeq"])
plan = Plan(active["planId"], SESSION)
ledger.step_started(plan, "write")
ledger.step_completed(plan, "write", input_tokens=300, output_tokens=900, output_content="## Bibliography")
ledger.plan_finalized(plan, "completed", summary="section added")
assert ledger.close(30), "events not delivered"

ledger = client("seed-001-check")
history = wait_for("the finished plan", lambda: ledger.history(SESSION)["plans"])
assert history[0]["planId"] == PLAN.plan_id and history[0]["status"] == "completed", history
assert ledger.active_plan(SESSION)["activePlan"] is None
timeline = ledger.plan(PLAN.plan_id)
assert [e["kind"] for e in timeline["timeline"]].count("step.completed") == 2
print(
    f"finished: {history[0]['status']}, {history[0]['completedSteps']}/{history[0]['totalSteps']} steps; no seq reused"
)
ledger.close(5)
