"""Drives the Python client for test/http/python-*.test.ts. Prints one JSON line per milestone.

  driver.py journal URL DIR N            publish N events (server down), print {"journaled": N}, then wait to be killed
  driver.py drain URL DIR                a new process on the same journal: deliver it, print the stats
  driver.py threads URL DIR N T          N events from T threads, close, print the stats
  driver.py asyncio URL DIR N T          N events from T asyncio tasks (AsyncPlanLedgerClient), flush(stored=True), print the stats
  driver.py kill URL DIR PLAN N COMMIT   N events of PLAN, 2 ms apart (journal_commit_ms COMMIT); print {"published": N}; wait to be killed
  driver.py burst URL DIR PLAN N         N events of PLAN at once, print {"published": N}, wait (the test sends SIGTERM)
  driver.py sigterm URL DIR PLAN N MODE  install_sigterm_handler (MODE chain: after the application's own handler was set,
                                         which prints the stats and exits 7; default: none), publish N events, print, wait
  driver.py fork URL DIR                 a parent and its forked children (multiprocessing, os.fork) publish plans of their own
  driver.py torn URL DIR PLAN N          half a line at the end of the journal, then a client on it publishes N events of PLAN
  driver.py bad URL DIR PLAN             valid events beside every value JSON cannot hold; flush(stored=True)
  driver.py refused URL DIR PLAN         a plan whose edit the server refuses (a dependency cycle); flush(stored=True)
  driver.py reads URL DIR SESSION        read your writes and the typed reads of a session's plan
  driver.py lineage URL DIR PLAN         a failed plan, its fork from the failure (run to the end) and a replay; the typed lineage
  driver.py stream URL DIR P N           N events over P plans, paced; prints {"published": k} every 250; flush; the stats
  driver.py idle URL DIR PLAN N PAUSE    N events of PLAN, each flushed, PAUSE seconds apart (the server closes idle connections); close
  driver.py pool URL DIR TAG             install_sigterm_handler, then a fork Pool(4) maps 8 tasks, each a plan of 200 events
                                         (TAG-<task>) published through the parent's client; the pool's teardown terminates
                                         its workers while their clients close; then the parent closes; prints its stats
  driver.py ryw-a URL DIR SESSION        publishes a plan of SESSION (plan SESSION-plan) and closes (prints {"closed": ...})
  driver.py ryw-b URL DIR SESSION        a new client on DIR: prints {"flushing": true}, flush(stored=True), then at once the
                                         session's active plan
  driver.py paced URL DIR TAG N T SECS   N events (plans of 125, ids TAG-<thread>-<plan>) from T threads, spread over SECS
                                         seconds; prints {"started": true} at the first, {"published": N} at the end; flush, close
"""
import asyncio
import datetime
import decimal
import json
import multiprocessing
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "clients", "python"))
from plan_ledger import AsyncPlanLedgerClient, Conflict, NotFound, Plan, PlanLedgerClient, PlanLedgerError  # noqa: E402

KEY = os.environ["PLAN_LEDGER_INGEST_KEY"]
READ_KEY = os.environ.get("PLAN_LEDGER_READ_KEY")
ADMIN_KEY = os.environ.get("PLAN_LEDGER_ADMIN_KEY")


def say(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")  # one write: a signal handler's line cannot land inside it
    sys.stdout.flush()


def steps(n):
    return [{"stepId": f"s{i}", "index": i, "agentId": "agent", "task": f"task {i}"} for i in range(n)]


def publish_plan(client, plan_id, count):
    """plan.created then step.started events: ``count`` events for one plan."""
    plan = Plan(plan_id, "sess-" + plan_id)
    client.plan_created(plan, query="driver", steps=steps(3))
    for i in range(count - 1):
        client.step_started(plan, f"s{i % 3}")


def totals(client, **more):
    s = client.stats()
    return dict(accepted=s.accepted, rejected=s.rejected, dropped=s.dropped, lost=s.lost, sender_errors=s.sender_errors, **more)


def wait_forever():
    while True:
        time.sleep(60)


POOL_CLIENT = None
POOL_TAG = ""


def pool_task(k):
    """A task of the fork pool: one plan of 200 events through the client the parent made (the child's own
    sender and journal start at its first publish)."""
    publish_plan(POOL_CLIENT, f"{POOL_TAG}-{k}", 200)
    return k


def main():
    mode, url, journal = sys.argv[1], sys.argv[2], sys.argv[3]
    args = sys.argv[4:]
    if mode == "journal":
        n = int(args[0])
        c = PlanLedgerClient(url, ingest_key=KEY, journal_dir=journal, batch_size=50, max_backoff=0.5)
        for p in range(n // 50):
            publish_plan(c, f"jplan-{p}", 50)
        while c.stats().journaled < n:
            time.sleep(0.01)
        say(journaled=c.stats().journaled)
        wait_forever()  # killed by the test
    elif mode == "drain":
        c = PlanLedgerClient(url, ingest_key=KEY, journal_dir=journal, max_backoff=0.5)
        ok = c.flush(60)
        s = c.stats()
        c.close(5)
        say(flushed=ok, accepted=s.accepted, rejected=s.rejected, dropped=s.dropped)
    elif mode == "threads":
        n, t = int(args[0]), int(args[1])
        c = PlanLedgerClient(url, ingest_key=KEY, journal_dir=journal, max_backoff=0.5)
        per_thread = n // t

        def work(k):
            for p in range(per_thread // 100):
                publish_plan(c, f"t{k}-plan-{p}", 100)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(t)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        ok = c.close(60)
        s = c.stats()
        say(flushed=ok, accepted=s.accepted, rejected=s.rejected, dropped=s.dropped)
    elif mode == "asyncio":
        n, t = int(args[0]), int(args[1])

        async def run():
            async with AsyncPlanLedgerClient(url, ingest_key=KEY, read_key=READ_KEY, journal_dir=journal, max_backoff=0.5) as ledger:
                async def task(k):
                    for p in range(n // t // 100):
                        plan = Plan(f"a{k}-plan-{p}", f"sess-a{k}")
                        ledger.plan_created(plan, query="driver", steps=steps(3))
                        for i in range(99):
                            ledger.step_started(plan, f"s{i % 3}")
                            if i % 10 == 0:
                                await asyncio.sleep(0)  # the tasks interleave

                await asyncio.gather(*(task(k) for k in range(t)))
                stored = await ledger.flush(90, stored=True)
                say(**totals(ledger, stored=stored))

        asyncio.run(run())
    elif mode == "kill":
        plan_id, n, commit = args[0], int(args[1]), float(args[2])
        c = PlanLedgerClient(url, ingest_key=KEY, journal_dir=journal, journal_commit_ms=commit)
        plan = Plan(plan_id, "sess-" + plan_id)
        c.plan_created(plan, query="kill", steps=steps(3))
        for i in range(n - 1):
            time.sleep(0.002)
            c.step_started(plan, f"s{i % 3}")
        say(published=n)
        wait_forever()
    elif mode == "burst":
        plan_id, n = args[0], int(args[1])
        c = PlanLedgerClient(url, ingest_key=KEY, journal_dir=journal)
        c.install_sigterm_handler(30)
        publish_plan(c, plan_id, n)
        say(published=n)
        wait_forever()
    elif mode == "sigterm":
        plan_id, n, how = args[0], int(args[1]), args[2]
        # the server is down: the events wait in memory (the group commit is an hour away) until SIGTERM
        c = PlanLedgerClient(url, ingest_key=KEY, journal_dir=journal, journal_commit_ms=3_600_000, probe_interval=3600)
        if how == "chain":

            def application_handler(signum, frame):
                s = c.stats()
                say(app_handler=True, journaled=s.journaled, buffered=s.buffered)
                os._exit(7)

            signal.signal(signal.SIGTERM, application_handler)
        c.install_sigterm_handler(30)
        plan = Plan(plan_id, "sess-" + plan_id)
        c.plan_created(plan, query="sigterm", steps=steps(3))
        while c.stats().journaled == 0:  # the first failed send journals it and marks the server down
            time.sleep(0.01)
        for i in range(n - 1):  # these stay in memory: nothing sends or commits them before SIGTERM
            c.step_started(plan, f"s{i % 3}")
        say(published=n, buffered=c.stats().buffered, journaled=c.stats().journaled)
        wait_forever()
    elif mode == "fork":
        c = PlanLedgerClient(url, ingest_key=KEY, journal_dir=journal)
        publish_plan(c, "fparent-a", 100)  # some of it is still in the parent's memory at the fork
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()

        def child(k):
            publish_plan(c, f"fchild-{k}", 50)
            queue.put(totals(c, child=k, flushed=c.flush(60)))
            # returns: multiprocessing's exit runs the client's close

        procs = [ctx.Process(target=child, args=(k,)) for k in range(2)]
        for p in procs:
            p.start()
        pid = os.fork()
        if pid == 0:  # a raw fork, as a pre-forking server does
            code = 1
            try:
                publish_plan(c, "fraw", 50)
                code = 0 if c.close(60) else 2
            finally:
                os._exit(code)
        reports = [queue.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(120)
        _, status = os.waitpid(pid, 0)
        publish_plan(c, "fparent-b", 100)
        ok = c.close(60)
        say(children=sorted(reports, key=lambda r: r["child"]), exitcodes=[p.exitcode for p in procs] + [os.waitstatus_to_exitcode(status)], **totals(c, flushed=ok))
    elif mode == "torn":
        plan_id, n = args[0], int(args[1])
        os.makedirs(journal, exist_ok=True)
        old = {"specVersion": 1, "eventId": "0190f000-0000-7000-8000-0000000000aa", "type": "plan.created", "planId": plan_id + "-old", "sessionId": "sess-old", "seq": 0,
               "occurredAt": "2024-05-01T12:00:00.000Z", "payload": {"query": "old", "steps": steps(1)}}
        line = json.dumps([old], separators=(",", ":"))
        with open(os.path.join(journal, "journal.jsonl"), "w") as f:
            f.write(line + "\n" + line[: len(line) // 2])  # killed in the middle of the second write
        c = PlanLedgerClient(url, ingest_key=KEY, journal_dir=journal)
        publish_plan(c, plan_id, n)
        ok = c.flush(60)
        say(**totals(c, flushed=ok, torn_bytes=c.stats().torn_bytes))
        c.close(5)
    elif mode == "bad":
        plan_id = args[0]
        c = PlanLedgerClient(url, ingest_key=KEY, read_key=READ_KEY, journal_dir=journal)
        plan = Plan(plan_id, "sess-" + plan_id)
        c.plan_created(plan, query="bad values", steps=steps(1))
        bad = {
            "lone surrogate": "name-\udcff.txt",
            "datetime": datetime.datetime(2024, 5, 1, 12, 0),
            "set": {"a", "b"},
            "bytes": b"\x00\x01",
            "Decimal": decimal.Decimal("1.10"),
            "NaN": float("nan"),
            "Infinity": float("inf"),
        }
        layer = 0
        for name, value in bad.items():
            c.step_started(plan, "s0")
            r = c.checkpoint_saved(plan, f"cp{layer}", layer, {"ok": 1, "bad": value})
            say(value=name, where="state", ok=r.ok, reason=r.reason, seq=r.seq, violations=[v.message for v in r.violations])
            r = c.step_failed(plan, "s0", error=value if isinstance(value, str) else "failed", input_tokens=None if isinstance(value, str) else value)
            say(value=name, where="field", ok=r.ok, reason=r.reason, seq=r.seq, violations=[v.message for v in r.violations])
            c.checkpoint_saved(plan, f"cp{layer}", layer, {"ok": layer})
            layer += 1
        last = c.plan_finalized(plan, "completed", summary="every valid neighbour stored")
        stored = c.flush(60, stored=True)
        s = c.stats()
        say(stored=stored, last_seq=last.seq, alive=c._thread.is_alive(), invalid=s.invalid, unencodable=s.unencodable, **totals(c))
        c.close(5)
    elif mode == "refused":
        plan_id = args[0]
        c = PlanLedgerClient(url, ingest_key=KEY, read_key=READ_KEY, journal_dir=journal)
        plan = Plan(plan_id, "sess-" + plan_id)
        c.plan_created(plan, query="refused edit", requires_approval=True, steps=steps(2))
        cycle = [{"step_id": "s0", "index": 0, "agent_id": "a", "task": "t0", "depends_on": ["s1"]}, {"step_id": "s1", "index": 1, "agent_id": "a", "task": "t1", "depends_on": ["s0"]}]
        refused = c.plan_decision(plan, "edit", steps=cycle, decided_by="bob")  # the mirror passes it: only the server checks the graph
        c.plan_decision(plan, "approve", decided_by="alice")
        for step in ("s0", "s1"):
            c.step_started(plan, step)
            c.step_completed(plan, step, input_tokens=10, output_tokens=5, output_content=f"out {step}")
        last = c.plan_finalized(plan, "completed")
        stored = c.flush(90, stored=True)
        view = c.plan(plan_id)
        say(refused_ok=refused.ok, refused_seq=refused.seq, refused_id=refused.event_id, last_seq=last.seq, stored=stored, status=view.plan.status,
            completed=view.plan.completed_steps, decisions=[d.decision for d in view.decisions], **totals(c))
        c.close(5)
    elif mode == "reads":
        session = args[0]
        c = PlanLedgerClient(url, ingest_key=KEY, read_key=READ_KEY, journal_dir=journal)
        before = c.active_plan(session)
        plan = Plan(session + "-plan", session)
        c.plan_created(plan, query="read your writes", requires_approval=True, steps=[
            {"step_id": "a", "index": 0, "agent_id": "x", "task": "first"},
            {"step_id": "b", "index": 1, "agent_id": "x", "task": "second", "depends_on": ["a"]},
            {"step_id": "c", "index": 2, "agent_id": "x", "task": "third", "depends_on": ["b"]},
        ])
        c.plan_decision(plan, "edit", decided_by="bob", steps=[
            {"step_id": "a", "index": 0, "agent_id": "x", "task": "first"},
            {"step_id": "b", "index": 1, "agent_id": "y", "task": "second, by y", "depends_on": ["a"]},
        ])
        c.step_started(plan, "a")
        c.step_completed(plan, "a", input_tokens=3, output_tokens=4, output_content="A", model="gpt-4o", provider="openai")
        stored = c.flush(60, stored=True)
        active = c.active_plan(session)  # read at once, no polling
        decision = c.decisions(plan.plan_id)[-1]
        page = c.plans(session, status="executing")
        point = c.resume_point(plan.plan_id)
        say(
            before=before.active_plan, stored=stored,
            active=dict(plan_id=active.active_plan.plan_id, completed=active.active_plan.completed_steps, next_seq=active.active_plan.next_seq, steps=[(s.step_id, s.status) for s in active.active_plan.steps]),
            same_as_dict=active["activePlan"]["nextSeq"] == active.active_plan.next_seq,
            decision=dict(decision=decision.decision, changed=decision.step_changes.changed, removed=decision.step_changes.removed,
                          replaced=None if decision.step_changes.replaced is None else sorted((r.step_id, r.agent_id, r.task) for r in decision.step_changes.replaced)),
            page=dict(total=page.total, plans=[p.plan_id for p in page.plans]),
            resume=dict(next_seq=point.next_seq, resumable=point.resumable),
            output=c.step_output(plan.plan_id, "a"),
            cost=dict(plan=str(active.active_plan.cost), is_decimal=isinstance(active.active_plan.cost, decimal.Decimal),
                      step=[(st.step_id, None if st.cost is None else str(st.cost), st.cost_source) for st in c.plan(plan.plan_id).steps]),
        )
        c.close(5)
    elif mode == "lineage":
        plan_id = args[0]
        c = PlanLedgerClient(url, ingest_key=KEY, read_key=READ_KEY, admin_key=ADMIN_KEY, journal_dir=journal)
        plan = Plan(plan_id, "sess-" + plan_id)
        c.plan_created(plan, query="fork me", steps=[
            {"step_id": "a", "index": 0, "agent_id": "x", "task": "first"},
            {"step_id": "b", "index": 1, "agent_id": "x", "task": "second", "depends_on": ["a"]},
            {"step_id": "c", "index": 2, "agent_id": "x", "task": "third", "depends_on": ["b"]},
        ])
        c.step_completed(plan, "a", input_tokens=3, output_tokens=4, result="A")
        c.checkpoint_saved(plan, "cp-a", 0, {"done": ["a"]})
        c.step_failed(plan, "b", error="boom")
        c.plan_finalized(plan, "failed", failure_reason="b failed")
        stored = c.flush(60, stored=True)
        try:
            c.fork_plan(plan_id)
            no_start = None
        except ValueError as err:
            no_start = str(err)
        fork = c.fork_plan(plan_id, from_failure=True, new_plan_id=plan_id + "-fix", edit_steps=[
            {"step_id": "b", "index": 1, "agent_id": "y", "task": "second, fixed", "depends_on": ["a"]},
        ])
        # the fork's executor: from its resume point, as after a restart
        point = c.resume_point(fork.plan_id)
        run = Plan(fork.plan_id, fork.session_id)
        c.continue_plan(fork.plan_id, fork.next_seq)
        c.step_completed(run, "b", input_tokens=5, output_tokens=6, result="B2")
        c.step_completed(run, "c", input_tokens=7, output_tokens=8, result="C2")
        c.plan_finalized(run, "completed")
        ran = c.flush(60, stored=True)
        replay = c.replay_plan(plan_id, new_plan_id=plan_id + "-again", session_id="other-" + plan_id)
        try:
            c.fork_plan(plan_id, from_layer=0, new_plan_id=plan_id + "-fix")
            conflict = None
        except Conflict as err:
            conflict = [err.status, err.message]
        try:
            c.fork_plan("no-such-plan", from_layer=0)
            not_found = None
        except NotFound as err:
            not_found = [err.status, err.message]
        reader = PlanLedgerClient(url, read_key=READ_KEY, journal_dir=None)
        try:
            reader.replay_plan(plan_id)
            no_admin = None
        except ValueError as err:
            no_admin = str(err)
        reader.close(1)
        not_admin = PlanLedgerClient(url, admin_key=READ_KEY, journal_dir=None)
        try:
            not_admin.replay_plan(plan_id)
            read_as_admin = None
        except PlanLedgerError as err:
            read_as_admin = [err.status, err.message]
        not_admin.close(1)
        lineage = c.plan_lineage(fork.plan_id)

        async def read_async():
            async with AsyncPlanLedgerClient(url, read_key=READ_KEY, journal_dir=None) as ledger:
                return (await ledger.plan_lineage(plan_id)).plans

        say(
            stored=stored, ran=ran, no_start=no_start,
            fork=dict(fork.raw), point=dict(next_layer=point.next_layer, next_steps=[s.step_id for s in point.next_steps],
                                           checkpoint=point.latest_checkpoint.checkpoint_id, next_seq=point.next_seq),
            replay=dict(plan_id=replay.plan_id, session_id=replay.session_id, kind=replay.kind, layer=replay.layer, next_steps=replay.next_steps),
            conflict=conflict, not_found=not_found, no_admin=no_admin, read_as_admin=read_as_admin,
            lineage=dict(root_id=lineage.root_id, plans=lineage.plans, truncated=lineage.truncated,
                         nodes=[[n.plan_id, n.parent_plan_id, n.kind, n.fork_layer, n.status, n.current] for n in lineage.root.walk()],
                         fork_cost=str(lineage.find(fork.plan_id).cost), same_as_dict=lineage["root"]["children"][0]["planId"] == lineage.root.children[0].plan_id),
            async_plans=asyncio.run(read_async()),
        )
        c.close(5)
    elif mode == "stream":
        plans, n = int(args[0]), int(args[1])
        c = PlanLedgerClient(url, ingest_key=KEY, journal_dir=journal, probe_interval=0.2, max_backoff=0.5)
        per_plan = n // plans
        handles = [Plan(f"stream-{p}", f"sess-stream-{p}") for p in range(plans)]
        for p in handles:
            c.plan_created(p, query="stream", steps=steps(3))
        k = plans
        for i in range(per_plan - 1):
            for p in handles:
                c.step_started(p, f"s{i % 3}")
                k += 1
                if k % 250 == 0:
                    say(published=k)
            time.sleep(0.01)
        ok = c.flush(120)
        say(**totals(c, flushed=ok, published=k, journaled=c.stats().journaled))
        c.close(5)
    elif mode == "idle":
        plan_id, n, pause = args[0], int(args[1]), float(args[2])
        c = PlanLedgerClient(url, ingest_key=KEY, journal_dir=journal)
        plan = Plan(plan_id, "sess-" + plan_id)
        c.plan_created(plan, query="idle", steps=steps(3))
        flushed = [c.flush(30)]
        for i in range(n - 1):
            time.sleep(pause)
            c.step_started(plan, f"s{i % 3}")
            flushed.append(c.flush(30))
        ok = c.close(30)
        say(**totals(c, flushed=flushed, closed=ok, journaled=c.stats().journaled))
    elif mode == "pool":
        tag = args[0]
        c = PlanLedgerClient(url, ingest_key=KEY, journal_dir=journal)
        c.install_sigterm_handler(30)
        global POOL_CLIENT, POOL_TAG
        POOL_CLIENT, POOL_TAG = c, tag
        with multiprocessing.get_context("fork").Pool(4) as pool:
            results = pool.map(pool_task, range(8))
        ok = c.close(60)
        say(**totals(c, flushed=ok, tasks=results))
    elif mode == "ryw-a":
        session = args[0]
        c = PlanLedgerClient(url, ingest_key=KEY, journal_dir=journal)
        plan = Plan(session + "-plan", session)
        c.plan_created(plan, query="read your writes across restarts", steps=steps(3))
        c.step_started(plan, "s0")
        say(closed=c.close(30))
    elif mode == "ryw-b":
        session = args[0]
        c = PlanLedgerClient(url, ingest_key=KEY, read_key=READ_KEY, journal_dir=journal)
        say(flushing=True)
        stored = c.flush(30, stored=True)
        active = c.active_plan(session).active_plan  # at once: no sleep, no poll
        say(stored=stored, active=None if active is None else active.plan_id)
        c.close(5)
    elif mode == "paced":
        tag, n, t, secs = args[0], int(args[1]), int(args[2]), float(args[3])
        c = PlanLedgerClient(url, ingest_key=KEY, journal_dir=journal, probe_interval=0.1, max_backoff=0.3, timeout=5)
        per_thread = n // t
        pause = secs / per_thread

        def work(k):
            for p in range(per_thread // 125):
                plan = Plan(f"{tag}-{k}-{p}", f"sess-{tag}-{k}")
                c.plan_created(plan, query="paced", steps=steps(3))
                for i in range(124):
                    time.sleep(pause)
                    c.step_started(plan, f"s{i % 3}")

        threads = [threading.Thread(target=work, args=(k,)) for k in range(t)]
        say(started=True)
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        say(published=per_thread // 125 * 125 * t)
        ok = c.flush(120)  # the server may still be restarting: wait for it
        ok = c.close(30) and ok
        say(**totals(c, flushed=ok, journaled=c.stats().journaled))
    else:
        raise SystemExit(f"unknown mode {mode}")


main()
