"""The Slurm route on a real one-node Slurm: the commands of docs/batch.md's section "Several machines: Slurm,
shards and `grade merge`", run as written (paths replaced), on a class of 12 submissions.

Starts munged, slurmctld and slurmd (Debian's `munge`, `slurmctld`, `slurmd`, `slurm-client`) as root, in the
foreground under this process (no systemd), every file under a temporary folder, on ports found free, with a
node of 16 CPUs, 128 GiB and four stand-in GPUs (a gres.conf naming fake device nodes; the node's real CPUs and
memory are overridden: SlurmdParameters=config_overrides). There is no GPU, so `grade batch` makes no-gpu rows
and exits 3: the script is made with --no-gpu-ok (and --max-running 2, Slurm's `%` throttle). The jobs run the
grader of this tree (an environment folder whose bin/activate activates this Python's and whose `grade` runs
`python -m grader` from this tree), activated by the script itself: every job is submitted with --export=NONE.

The checks, each on its own results folder:
  1. script   `grade slurm-script ... > grade-class.sh`, `bash grade-class.sh`: tasks 1-4 and the dependent merge
              complete, one row per submission in the merged gradebook, a log per job;
  2. cancel   task 3 cancelled (scancel) after its first row: Slurm cancels the merge (DependencyNeverSatisfied),
              the docs' merge by hand exits 4 naming shard 3's missing submissions; `bash grade-class.sh 3`
              resumes it (each of its ids graded once) and its merge completes with one row per submission;
  3. lost     the array submitted as 0-3 (sbatch --array=0-3 grade-class.sh): task 0 exits 2 saying why, a merge
              after them (afterany) exits 4 naming shard 4 and its submissions; `bash grade-class.sh 0-3` is
              refused before anything is submitted;
  4. dropped  the docs' merge with --expect on the class less one submission: exit 0, its row dropped and named;
  5. node     the docs' single-node job (--gres=gpu:4, no shards): exit 3 (no GPU), one row per submission.
Every daemon it started is stopped on the way out (jobs cancelled first), on failure, Ctrl-C or SIGTERM too; the
daemons also get SIGTERM if this process is killed outright (PR_SET_PDEATHSIG), but then a job running at that
moment leaves its slurmstepd behind (it ignores SIGTERM: end it by its id with SIGKILL) and the temporary folder.

    python tests/slurm_check.py [--keep]    as root; --keep leaves the temporary folder (logs, results)

Exit codes: 0 every check held; 1 a check failed (what, then the logs); 2 cannot run here (not Linux, not root, a
program missing: the reason). tests/test_slurm.py runs it (CI: .ci/run installs the packages and sets
GRADER_REQUIRE_SLURM=1).
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import json
import os
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "batch.md"
SECTION = "## Several machines: Slurm, shards and `grade merge`"
PROGRAMS = ("munged", "munge", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")
PACKAGES = "apt-get install slurmctld slurmd slurm-client munge"
SHARDS = 4
CLASS_SIZE = 12
WAIT_S = 300.0
"""Hang guard of one wait (a job to end, a daemon to answer): never a speed limit."""
DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL",
        "DEADLINE"}
EXAMPLES = sorted((ROOT / "submissions").glob("*.cu"))
HARNESS_OPTIONS = "--env {env} --no-gpu-ok --max-running 2"
"""What the harness adds to the docs' `grade slurm-script` line: its environment, no GPU here, the throttle."""


class Failed(AssertionError):
    """A check that did not hold."""


class CannotRun(Exception):
    """This machine cannot run the cluster (the reason)."""


def check(condition: object, message: str) -> None:
    if not condition:
        raise Failed(message)


def cannot_run() -> str | None:
    """Why the one-node cluster cannot run here, or None."""
    if not sys.platform.startswith("linux"):
        return "the one-node Slurm runs on Linux only"
    if os.geteuid() != 0:
        return "the one-node Slurm runs its daemons as root (sudo python tests/slurm_check.py)"
    gone = [p for p in PROGRAMS if shutil.which(p) is None and not Path("/usr/sbin", p).is_file()]
    if gone:
        return f"no {', '.join(gone)} here: {PACKAGES}"
    return None


# --- the docs' commands ------------------------------------------------------------------------------------
def docs_commands(text: str | None = None) -> dict[str, str]:
    """The commands of docs/batch.md's Slurm section (its indented code lines; a `\\` continuation joined, a
    trailing `# comment` cut), by role: script (`grade slurm-script ... > grade-class.sh`), submit (`bash
    grade-class.sh`), resubmit (`bash grade-class.sh K`), batch (`grade batch ... --shard K/N`), merge (`grade
    merge ... --expect ...`), node (the single-node `sbatch`). Raises Failed when a role is missing or twice."""
    text = DOCS.read_text(encoding="utf-8") if text is None else text
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    lines, joined = [], ""
    for line in text[start: end if end > 0 else None].splitlines():
        if not line.startswith("    ") or line.strip().startswith("- "):
            continue
        joined += line.strip()
        if joined.endswith("\\"):
            joined = joined[:-1]
            continue
        lines.append(re.sub(r"\s+#\s.*$", "", joined).strip())
        joined = ""
    roles = {"script": r"grade slurm-script .*> grade-class\.sh", "submit": r"bash grade-class\.sh",
             "resubmit": r"bash grade-class\.sh \d+", "batch": r"grade batch .*--shard \d+/\d+",
             "merge": r"grade merge .*--expect .*", "node": r"sbatch .*--wrap .*"}
    found = {}
    for role, pattern in roles.items():
        hits = [c for c in lines if re.fullmatch(pattern, c)]
        check(len(hits) == 1, f"docs/batch.md's Slurm section: {len(hits)} commands of the form {pattern!r}, "
                              f"expected one: {hits}")
        found[role] = hits[0]
    return found


def placed(command: str, cls: Path, out: Path, env: Path) -> str:
    """A docs command with the example paths replaced by this run's."""
    return (command.replace("/shared/class", shlex.quote(str(cls))).replace("/shared/results", shlex.quote(str(out)))
            .replace("/path/to/venv", shlex.quote(str(env))))


# --- the cluster ---------------------------------------------------------------------------------------------
def _die_with_parent() -> None:
    """In a daemon's child before exec: SIGTERM when this process dies (Linux prctl PR_SET_PDEATHSIG)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A one-node Slurm under `root` (module docstring): start(), run(), wait(), stop()."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.conf = root / "etc" / "slurm.conf"
        self.daemons: list[tuple[str, subprocess.Popen]] = []
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.env.pop("SLURM_JOB_ID", None)

    def write_config(self) -> None:
        r, host = self.root, socket.gethostname().split(".")[0]
        for d in ("etc", "state", "spool/grade-node", "dev", "log", "munge", "key"):
            (r / d).mkdir(parents=True, exist_ok=True)
        (r / "key").chmod(0o700)
        (r / "key" / "munge.key").write_bytes(os.urandom(128))
        (r / "key" / "munge.key").chmod(0o400)
        for i in range(4):  # stand-in GPUs: character devices like /dev/null, as slurmd wants for File=
            try:
                os.mknod(r / "dev" / f"nvidia{i}", 0o644 | stat.S_IFCHR, os.makedev(1, 3))
            except OSError:  # no CAP_MKNOD (a container): a plain file, which slurmd logs as an error and counts
                (r / "dev" / f"nvidia{i}").touch()
        (r / "etc" / "gres.conf").write_text(f"Name=gpu File={r}/dev/nvidia[0-3]\n")
        self.conf.write_text("\n".join([
            "ClusterName=gradeci", f"SlurmctldHost={host}(127.0.0.1)", f"SlurmctldPort={free_port()}",
            f"SlurmdPort={free_port()}", "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge",
            "CredType=cred/munge", f"AuthInfo=socket={r}/munge/munge.socket", f"StateSaveLocation={r}/state",
            f"SlurmdSpoolDir={r}/spool/%n", f"SlurmctldPidFile={r}/slurmctld.pid", f"SlurmdPidFile={r}/slurmd.pid",
            f"SlurmctldLogFile={r}/log/slurmctld.log", f"SlurmdLogFile={r}/log/slurmd.log",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "MpiDefault=none", "MailProg=/bin/true",
            "SchedulerType=sched/backfill", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core_Memory",
            "GresTypes=gpu", "SlurmdParameters=config_overrides", "ReturnToService=2", "MinJobAge=3600",
            "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none",
            f"NodeName=grade-node NodeAddr=127.0.0.1 NodeHostname={host} CPUs=16 RealMemory=131072 Gres=gpu:4 "
            "State=UNKNOWN",
            "PartitionName=ci Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""]))

    def daemon(self, name: str, *args: str) -> None:
        log = open(self.root / "log" / f"{name}.out", "wb")
        self.daemons.append((name, subprocess.Popen([name, *args], stdout=log, stderr=subprocess.STDOUT,
                                                     env=self.env, preexec_fn=_die_with_parent)))

    def start(self) -> None:
        """Write the configuration, start munged, slurmctld and slurmd, and wait for the node to be idle."""
        self.write_config()
        self.root.chmod(0o755)  # munged's socket folder must be searchable by all
        r = self.root
        self.daemon("munged", "-F", f"--socket={r}/munge/munge.socket", f"--key-file={r}/key/munge.key",
                    f"--pid-file={r}/munge/munged.pid", f"--seed-file={r}/munge/seed", f"--log-file={r}/log/munged.log")
        self.until(lambda: self.quiet(["munge", "-n", "-S", f"{r}/munge/munge.socket"]), "munged to answer")
        self.daemon("slurmctld", "-D", "-f", str(self.conf))
        self.until(lambda: "is UP" in self.out(["scontrol", "ping"]), "slurmctld to answer")
        self.daemon("slurmd", "-D", "-f", str(self.conf), "-N", "grade-node")
        self.until(lambda: self.out(["sinfo", "-h", "-o", "%t"]).strip() == "idle", "the node to be idle")

    def until(self, condition, what: str, guard: float = WAIT_S) -> None:
        """Poll `condition` every 0.2 s until it holds; Failed after `guard` seconds, or when a daemon ended."""
        deadline = time.monotonic() + guard
        while not condition():
            ended = [n for n, p in self.daemons if p.poll() is not None]
            check(not ended, f"{', '.join(ended)} ended while waiting for {what}")
            check(time.monotonic() < deadline, f"waited {guard:.0f} s for {what}")
            time.sleep(0.2)

    def quiet(self, argv: list[str]) -> bool:
        return subprocess.run(argv, env=self.env, capture_output=True).returncode == 0

    def out(self, argv: list[str]) -> str:
        return subprocess.run(argv, env=self.env, capture_output=True, text=True).stdout

    def run(self, command: str, cwd: Path, path: Path) -> subprocess.CompletedProcess:
        """`command` through bash in `cwd`, with `path` (a folder of programs) first on PATH."""
        env = {**self.env, "PATH": f"{path}{os.pathsep}{self.env.get('PATH', '')}"}
        return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=WAIT_S)

    def jobs(self, job: str) -> list[dict[str, str]]:
        """Every record of job `job` (an array's tasks each), as scontrol gives its fields."""
        text = self.out(["scontrol", "show", "job", "-o", job])
        return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in text.splitlines() if line.strip()]

    def wait(self, job: str) -> dict[str, tuple[str, str, str]]:
        """Wait for every task of `job` to end; {task id ('' for a job that is no array): (state, exit code,
        reason)}."""
        def ended() -> bool:
            records = self.jobs(job)
            return bool(records) and all(r.get("JobState") in DONE for r in records)

        self.until(ended, f"job {job} to end")
        return {r.get("ArrayTaskId", ""): (r["JobState"], r.get("ExitCode", ""), r.get("Reason", ""))
                for r in self.jobs(job)}

    def stop(self) -> None:
        """Cancel every job, wait (a while) for none to be left, then stop the daemons (SIGTERM, then SIGKILL)."""
        if any(n == "slurmctld" and p.poll() is None for n, p in self.daemons):
            left = self.out(["squeue", "-h", "-o", "%A"]).split()
            if left:
                subprocess.run(["scancel", *sorted(set(left))], env=self.env, capture_output=True)
                try:
                    self.until(lambda: not self.out(["squeue", "-h", "-o", "%A"]).split(), "the jobs to end", 60)
                except Failed as err:
                    print(f"slurm_check: {err}", file=sys.stderr)
        for _name, p in reversed(self.daemons):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(30)
        self.daemons.clear()

    def logs(self) -> str:
        """The last lines of every daemon's log, for a failure's report."""
        parts = []
        for f in sorted((self.root / "log").glob("*")):
            lines = f.read_text(errors="replace").splitlines()[-15:]
            parts.append(f"--- {f.name}\n" + "\n".join(lines))
        return "\n".join(parts)


# --- the class, the grader's environment, the checks ------------------------------------------------------------
def make_class(folder: Path) -> list[str]:
    """CLASS_SIZE submissions under `folder`, the examples in turn: odd ones as files (s01.cu), even ones as
    student folders holding one .cu (s02/kernel.cu). Returns the ids, sorted."""
    ids = [f"s{i:02d}" for i in range(1, CLASS_SIZE + 1)]
    for n, i in enumerate(ids):
        source = EXAMPLES[n % len(EXAMPLES)].read_bytes()
        target = folder / f"{i}.cu" if n % 2 == 0 else folder / i / "kernel.cu"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source)
    return ids


def make_env(folder: Path) -> Path:
    """An environment folder for the jobs: bin/activate activates this Python's environment (its own
    bin/activate, where it has one) and puts bin/ first on PATH; bin/grade runs this tree's grader."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True)
    real = Path(sys.prefix) / "bin" / "activate"
    (bin_dir / "activate").write_text((f". {shlex.quote(str(real))}\n" if real.is_file() else "")
                                      + f'export PATH={shlex.quote(str(bin_dir))}:"$PATH"\n')
    grade = bin_dir / "grade"
    grade.write_text(f'#!/bin/sh\nPYTHONPATH={shlex.quote(str(ROOT))}${{PYTHONPATH:+:$PYTHONPATH}} '
                     f'exec {shlex.quote(sys.executable)} -m grader "$@"\n')
    grade.chmod(0o755)
    return folder


class Run:
    """One run of the checks: the cluster, the class (`ids`), the jobs' environment, the docs' commands."""

    def __init__(self, cluster: Cluster, root: Path) -> None:
        self.cluster, self.root = cluster, root
        self.cls = root / "class"
        self.ids = make_class(self.cls)
        self.env = make_env(root / "env")
        self.docs = docs_commands()
        self.started = time.monotonic()

    def say(self, text: str) -> None:
        print(f"slurm_check: [{time.monotonic() - self.started:6.1f} s] {text}", flush=True)

    def shard_ids(self, k: int) -> list[str]:
        return self.ids[k - 1::SHARDS]

    def sh(self, command: str, where: Path, out: Path, cls: Path | None = None) -> subprocess.CompletedProcess:
        """A docs command, its paths placed (class `cls`, default the run's; results `out`), run in `where`."""
        where.mkdir(parents=True, exist_ok=True)
        return self.cluster.run(placed(command, cls or self.cls, out, self.env), where, self.env / "bin")

    def script(self, name: str) -> tuple[Path, Path]:
        """A scenario's folder and results folder, with grade-class.sh made by the docs' command (plus the
        harness's options)."""
        where, out = self.root / name, self.root / name / "results"
        gen = self.docs["script"].replace(" > grade-class.sh", " " + HARNESS_OPTIONS.format(
            env=shlex.quote(str(self.env))) + " > grade-class.sh")
        r = self.sh(gen, where, out)
        check(r.returncode == 0 and "SHARDS=4" in (where / "grade-class.sh").read_text(), f"{gen}: {r.stderr}")
        return where, out

    def submit(self, command: str, where: Path, out: Path) -> tuple[str, str]:
        """Run a docs submission (`bash grade-class.sh [K]`); (the tasks' job id, the merge's)."""
        r = self.sh(command, where, out)
        m = re.search(r"tasks: job (\d+),.*merge: job (\d+)", r.stdout)
        check(r.returncode == 0 and m, f"{command}: exit {r.returncode}\n{r.stdout}{r.stderr}")
        return m.group(1), m.group(2)

    def rows(self, csv_path: Path) -> list[str]:
        with open(csv_path, newline="", encoding="utf-8-sig") as f:
            return [row["id"] for row in csv.DictReader(f)]


def row_ids(results: Path) -> list[str]:
    """The id of each row of a results file, in order (a repeated id: graded twice)."""
    return [json.loads(line)["id"] for line in results.read_text().splitlines() if line.strip()]


def check_script(run: Run) -> Path:
    """1. The script and its dependent merge: every task and the merge complete, one row per submission, a log
    per job. Returns the results folder."""
    where, out = run.script("script")
    tasks, merge = run.submit(run.docs["submit"], where, out)
    run.say(f"submitted tasks {tasks} (1-{SHARDS}, at most 2 at once) and merge {merge}")
    states = run.cluster.wait(tasks)
    check(states == {str(k): ("COMPLETED", "0:0", "None") for k in range(1, SHARDS + 1)}, f"tasks: {states}")
    check(run.cluster.wait(merge)[""][:2] == ("COMPLETED", "0:0"), f"merge: {run.cluster.jobs(merge)}")
    check(run.rows(out / "gradebook" / "gradebook.csv") == run.ids, "the merged gradebook lacks rows")
    logs = sorted(p.name for p in (out / "slurm").iterdir())
    check(logs == sorted([f"grade-class-{tasks}_{k}.out" for k in range(1, SHARDS + 1)] + [f"grade-merge-{merge}.out"]),
          f"logs: {logs}")
    check("NO_GPU_OK=1 counts the task as done" in (out / "slurm" / f"grade-class-{tasks}_1.out").read_text(),
          "task 1's log does not say it found no GPU")
    run.say(f"script: {len(run.ids)} rows, one per submission, merged by the dependent job")
    return out


def check_cancel(run: Run) -> None:
    """2. Task K (the docs' resubmitted one) cancelled after its first row: the merge is cancelled, the docs'
    merge by hand exits 4 naming the shard's missing ids, the docs' resubmission completes it."""
    k = int(run.docs["resubmit"].split()[-1])
    where, out = run.script("cancel")
    tasks, merge = run.submit(run.docs["submit"], where, out)
    shard_file = out / f"results.shard-{k}-of-{SHARDS}.jsonl"
    run.cluster.until(lambda: shard_file.is_file() and shard_file.read_bytes().count(b"\n") >= 1,
                      f"task {k}'s first row")
    subprocess.run(["scancel", f"{tasks}_{k}"], env=run.cluster.env, check=True)
    kept = shard_file.read_bytes().count(b"\n")
    run.say(f"cancelled task {k} with {kept} of {len(run.shard_ids(k))} rows")
    states = run.cluster.wait(tasks)
    check(states[str(k)][0] == "CANCELLED", f"task {k} was not cancelled (it had ended?): {states}")
    check(run.cluster.wait(merge)[""] == ("CANCELLED", "0:0", "DependencyNeverSatisfied"),
          f"the merge was not cancelled by --kill-on-invalid-dep: {run.cluster.jobs(merge)}")
    r = run.sh(run.docs["merge"], where, out)
    lacking = [i for i in run.shard_ids(k) if i not in row_ids(shard_file)]
    check(r.returncode == 4 and lacking and f"shard {k}: {', '.join(lacking)}" in r.stderr,
          f"the hand merge after a cancelled task: exit {r.returncode}, lacking {lacking}\n{r.stderr}")
    tasks, merge = run.submit(run.docs["resubmit"], where, out)
    check(run.cluster.wait(tasks) == {str(k): ("COMPLETED", "0:0", "None")}, f"task {k} again")
    check(run.cluster.wait(merge)[""][:2] == ("COMPLETED", "0:0"), f"merge: {run.cluster.jobs(merge)}")
    check(run.rows(out / "gradebook" / "gradebook.csv") == run.ids, "the merged gradebook lacks rows")
    graded = row_ids(shard_file)
    check(sorted(graded) == run.shard_ids(k), f"shard {k}'s rows after the resubmission: {graded}")
    run.say(f"cancel: the merge was cancelled, the hand merge named {', '.join(lacking)} (exit 4); task {k} "
            f"resumed ({len(lacking)} graded) and the merge completed")


def check_lost_shard(run: Run) -> None:
    """3. An array submitted 0-3: task 0 refuses, a merge after the tasks fails naming shard 4."""
    where, out = run.script("lost")
    r = run.sh("bash grade-class.sh 0-3", where, out)
    check(r.returncode == 2 and "nothing was submitted" in r.stderr and not out.joinpath("slurm").exists(),
          f"bash grade-class.sh 0-3: exit {r.returncode} {r.stderr}")
    tasks = run.sh("sbatch --parsable --array=0-3 --export=NONE grade-class.sh", where, out).stdout.strip()
    merge = run.sh(f"sbatch --parsable --dependency=afterany:{tasks} --export=NONE grade-class.sh merge", where,
                   out).stdout.strip()
    check(tasks.isdigit() and merge.isdigit(), f"sbatch: {tasks!r} {merge!r}")
    states = run.cluster.wait(tasks)
    check(states["0"][:2] == ("FAILED", "2:0") and all(states[str(k)][0] == "COMPLETED" for k in (1, 2, 3)),
          f"tasks 0-3: {states}")
    log = (where / f"slurm-{tasks}_0.out").read_text()
    check("array task 0 is outside 1..4" in log, f"task 0's log: {log}")
    check(run.cluster.wait(merge)[""][:2] == ("FAILED", "4:0"), f"merge: {run.cluster.jobs(merge)}")
    log = (where / f"slurm-{merge}.out").read_text()
    check("shard 4 of 4 has no results file" in log and f"shard 4: {', '.join(run.shard_ids(4))}" in log,
          f"the merge's log: {log}")
    run.say(f"lost shard: task 0 exited 2, the merge exited 4 naming shard 4 ({', '.join(run.shard_ids(4))})")


def check_dropped(run: Run, out: Path) -> None:
    """4. The docs' merge against the class less one submission: exit 0, that row dropped and named."""
    smaller = run.root / "class-less-one"
    shutil.copytree(run.cls, smaller)
    gone = run.ids[4]
    shutil.rmtree(smaller / gone) if (smaller / gone).is_dir() else (smaller / f"{gone}.cu").unlink()
    r = run.sh(run.docs["merge"].replace("/shared/results/gradebook", str(run.root / "dropped-book")), run.root, out,
               cls=smaller)
    check(r.returncode == 0 and f"no longer in the class: {gone}" in r.stderr, f"exit {r.returncode}: {r.stderr}")
    check(run.rows(run.root / "dropped-book" / "gradebook.csv") == [i for i in run.ids if i != gone], "rows")
    run.say(f"dropped: {gone}'s row left out and named")


def check_node(run: Run) -> None:
    """5. The docs' single-node job: one job, no shards; exit 3 here (no GPU), one row per submission."""
    where = run.root / "node"
    out = where / "results"
    r = run.sh(run.docs["node"], where, out)
    m = re.search(r"Submitted batch job (\d+)", r.stdout)
    check(m, f"{run.docs['node']}: {r.stdout}{r.stderr}")
    check(run.cluster.wait(m.group(1))[""][:2] == ("FAILED", "3:0"), f"job: {run.cluster.jobs(m.group(1))}")
    check(run.rows(out / "gradebook.csv") == run.ids, "the single node's gradebook lacks rows")
    run.say(f"node: one job with 4 (stand-in) GPUs, {len(run.ids)} rows (exit 3: no GPU)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="leave the temporary folder (logs, results)")
    args = parser.parse_args(argv)
    reason = cannot_run()
    if reason:
        print(f"slurm_check: cannot run here: {reason}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the daemons are stopped (finally)
    root = Path(tempfile.mkdtemp(prefix="grade-slurm-"))
    cluster = Cluster(root)
    try:
        run = Run(cluster, root)
        cluster.start()
        run.say(f"one-node Slurm up under {root}")
        out = check_script(run)
        check_cancel(run)
        check_lost_shard(run)
        check_dropped(run, out)
        check_node(run)
        run.say("every check held")
        return 0
    except Failed as err:
        print(f"slurm_check: FAILED: {err}\n{cluster.logs()}", file=sys.stderr)
        return 1
    finally:
        cluster.stop()
        if args.keep:
            print(f"slurm_check: kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
