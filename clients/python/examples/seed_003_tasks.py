"""Seed 003: the implement task reads the plan that an earlier plan task wrote, from the database.

Two tasks that share nothing but the ledger (two clients, as on two machines): the plan task stores
its output as the step's output content; the implement task fetches it byte for byte.
"""
from _common import client, wait_for
from plan_ledger import Plan

WORKFLOW = Plan("wf-003-feature", "task-runner-003")
PLAN_MD = "# Implementation plan\n\n1. Add the `Todo` model\n2. Expose `GET /todos`\n\nÜñíçødé survives too.\n"

# --- the plan task
planner = client("seed-003-plan")
planner.plan_created(
    WORKFLOW,
    query="Implement the TODO feature",
    steps=[
        {"stepId": "plan", "index": 0, "agentId": "planner", "task": "Write the implementation plan"},
        {"stepId": "implement", "index": 1, "agentId": "coder", "task": "Implement the plan", "dependsOn": ["plan"]},
    ],
)
planner.step_started(WORKFLOW, "plan")
planner.step_completed(WORKFLOW, "plan", input_tokens=400, output_tokens=200, model="gpt-4o", output_content=PLAN_MD)
assert planner.close(30)

# --- the implement task, elsewhere: only the workflow id is known
coder = client("seed-003-implement")
text = wait_for("the plan task's output", lambda: coder.step_output(WORKFLOW.plan_id, "plan"))
assert text == PLAN_MD, repr(text)
by_index = coder.step_output(WORKFLOW.plan_id, 0)
assert by_index == PLAN_MD
point = coder.resume_point(WORKFLOW.plan_id)
coder.continue_plan(WORKFLOW.plan_id, point["nextSeq"])
coder.step_started(WORKFLOW, "implement")
steps_in_plan = [line for line in text.splitlines() if line[:2] in ("1.", "2.")]
coder.step_completed(
    WORKFLOW,
    "implement",
    input_tokens=900,
    output_tokens=1500,
    output_content=f"implemented {len(steps_in_plan)} plan items",
)
coder.plan_finalized(WORKFLOW, "completed")
assert coder.close(30)
print(
    f"implement task read {len(text.encode('utf-8'))} bytes of plan output and implemented {len(steps_in_plan)} items"
)
