"""A stand-in for `python -m grader.batch.worker` in CPU tests of the batch's process handling: it speaks the same
protocol (grader.batch.worker's docstring) and behaves as the submission's first line says:

  // FAKE: hang-setup       never reports a stage (start-up limit)
  // FAKE: hang-compile     reports `compile`, then sleeps (compile limit)
  // FAKE: hang-run         reports `compile`, `verify`, then sleeps (run limit)
  // FAKE: segv             reports `compile`, `verify`, then dies of SIGSEGV
  // FAKE: exit             writes a line to stderr and exits 1 without a result
  // FAKE: graded V F       a kernel graded as a GPU would: verdict V (gold, silver, fail), fraction F of the
                            floor, compiled and correct at every shape (its Gradescope score: 10, 8 or 5)
  // FAKE: hang-counters    sends a gold `graded` report, starts `sleep` in a session of its own and reports
                            its group (`child`), reports `counters`, then sleeps (the counters' limit)
  anything else             a normal error result, at once
"""

import argparse
import json
import os
import signal
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--fd", type=int)
args = p.parse_args()


def send(**msg):
    os.write(args.fd, (json.dumps(msg) + "\n").encode())


send(event="ready", t=time.time())
line = sys.stdin.readline()
if not line.strip():
    sys.exit(0)
job = json.loads(line)
first = open(job["path"], encoding="utf-8", errors="replace").readline()
mode = first.split("FAKE:", 1)[1].strip() if "FAKE:" in first else ""
if mode == "hang-setup":
    time.sleep(3600)
send(event="stage", stage="compile", t=time.time())
if mode == "hang-compile":
    time.sleep(3600)
send(event="stage", stage="verify", t=time.time())
if mode == "hang-run":
    time.sleep(3600)
if mode == "segv":
    os.kill(os.getpid(), signal.SIGSEGV)
if mode == "exit":
    print("Traceback (most recent call last):\nRuntimeError: boom in the grader", file=sys.stderr)
    sys.exit(1)
if mode == "hang-counters":
    import subprocess

    send(event="graded", report={"kernel": "biasGeluFused",
             "file": job["display"], "verdict": "gold", "stage": "grade", "reason": "0.96",
                                 "fraction": 0.96})
    child = subprocess.Popen(["sleep", "3600"], start_new_session=True)
    open(os.path.join(os.path.dirname(job["path"]), "..", "child.pid"), "w").write(str(child.pid))
    send(event="child", pgid=child.pid)
    send(event="stage", stage="counters", t=time.time())
    time.sleep(3600)
if mode.startswith("graded "):
    _, verdict, fraction = mode.split()
    report = {"kernel": "biasGeluFused",
             "file": job["display"], "verdict": verdict, "stage": "grade", "reason": f"{fraction} of the copy floor",
              "fraction": float(fraction), "compile": {"arch": "sm_90", "registers": 20},
              "verification": [{"rows": 101, "cols": 97, "passed": True, "total": 9797, "message": "correct"}]}
    send(event="result", phases={"total": 0.01}, report=report)
    sys.exit(0)
report = {"kernel": "biasGeluFused",
             "file": job["display"], "verdict": "error", "stage": "compile", "reason": f"fake result for {job['name']}"}
send(event="result", phases={"total": 0.01}, report=report)
