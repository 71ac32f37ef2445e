"""The Slurm route (docs/batch.md, "Several machines: Slurm, shards and `grade merge`"): the job script `grade
slurm-script` prints (grader/batch/slurm.py, grader/batch/grade-class.sh), its settings and commands as the docs
and the README show them, its modes run with stand-ins for sbatch and grade (no Slurm needed), and the whole route
on a real one-node Slurm (tests/slurm_check.py).

That last test runs where the cluster can (Linux, root, Debian's slurmctld, slurmd, slurm-client and munge
installed) and skips saying why elsewhere; with GRADER_REQUIRE_SLURM=1 (.ci/run, which installs them) it fails
instead, so CI really runs it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import slurm_check  # tests/slurm_check.py, beside conftest (pytest puts tests/ on sys.path)
from conftest import ROOT
from grader.batch import slurm

DOCS = ROOT / "docs" / "batch.md"
SETTINGS = ("CLASS", "OUT", "SHARDS", "MAX_RUNNING", "GRADER_ENV", "NO_GPU_OK", "TASK", "MERGE", "SBATCH")
HARNESS_TIMEOUT_S = 1200
"""A hang guard for the whole cluster run (it takes about 3 minutes on a 2-core machine), not a speed limit."""


def settings_lines(text: str) -> list[str]:
    """The `NAME=value` lines of SETTINGS in `text`, in order."""
    return [line.strip() for line in text.splitlines() if re.match(rf"\s*({'|'.join(SETTINGS)})=", line)]


def test_the_docs_show_the_scripts_settings_as_printed():
    docs = DOCS.read_text(encoding="utf-8")
    section = docs[docs.index(slurm_check.SECTION):]
    shown = settings_lines(section.split("\n## ")[0])[: len(SETTINGS)]
    assert shown == settings_lines(slurm.script(env="/path/to/venv"))
    assert [s.split("=")[0] for s in shown] == list(SETTINGS)


def test_the_docs_commands_are_the_harness_and_the_readmes():
    """Each role the harness runs is in the docs once; the README's Slurm lines are the docs' own commands."""
    commands = slurm_check.docs_commands()
    assert commands["script"] == "grade slurm-script --class /shared/class --out /shared/results --shards 4 " \
                                 "> grade-class.sh"
    assert commands["merge"].endswith("--expect /shared/class --shards 4")
    readme = [re.sub(r"\s+#\s.*$", "", line).strip() for line in (ROOT / "README.md").read_text().splitlines()
              if re.match(r"    (grade slurm-script|bash grade-class)", line)]
    assert readme == [commands["script"], commands["submit"]]


def test_the_docs_commands_are_found_only_once_each():
    docs = DOCS.read_text(encoding="utf-8")
    twice = docs.replace("    bash grade-class.sh 3 ", "    bash grade-class.sh 3\n    bash grade-class.sh 2 ")
    with pytest.raises(slurm_check.Failed, match="2 commands of the form"):
        slurm_check.docs_commands(twice)


def test_the_options_fill_the_settings_quoted_and_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = slurm.script("my class", "out", 3, 2, "/opt/env x", True)
    assert settings_lines(text)[:6] == [f"CLASS='{tmp_path}/my class'", f"OUT={tmp_path}/out", "SHARDS=3",
                                        "MAX_RUNNING=2", "GRADER_ENV='/opt/env x'", "NO_GPU_OK=1"]
    assert "@" not in "".join(settings_lines(text))
    assert settings_lines(slurm.script())[:6] == ["CLASS=/shared/class", "OUT=/shared/results", "SHARDS=4",
                                                  "MAX_RUNNING=", f"GRADER_ENV={sys.prefix}", "NO_GPU_OK=0"]
    with pytest.raises(ValueError):
        slurm.script(shards=0)


def test_grade_slurm_script_prints_it(capsys):
    from grader import cli

    assert cli.main(["slurm-script", "--shards", "2", "--no-gpu-ok", "--env", "/e"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#!/bin/bash\n") and "SHARDS=2\n" in out and "GRADER_ENV=/e\n" in out
    with pytest.raises(SystemExit) as stop:
        cli.main(["slurm-script", "--shards", "0"])
    assert stop.value.code == 2


# --- the script's modes, with stand-ins for sbatch and grade ---------------------------------------------------
@pytest.fixture()
def stand_ins(tmp_path):
    """(folder, run): grade-class.sh made with 4 shards, a throttle of 2 and GRADER_ENV a folder whose `grade`
    notes its arguments and exits $GRADE_EXIT; an `sbatch` on PATH that notes its arguments and answers job 41,
    then 42. run(*args, **env) runs `bash grade-class.sh ARGS` there with only those variables (and PATH)."""
    bin_dir = tmp_path / "bin"
    env_bin = tmp_path / "env" / "bin"
    for folder in (bin_dir, env_bin):
        folder.mkdir(parents=True)
    (bin_dir / "sbatch").write_text('#!/bin/bash\necho "$*" >> "$CALLS"\nn=$(wc -l < "$CALLS")\necho "$((40 + n));c"\n')
    (env_bin / "grade").write_text('#!/bin/bash\necho "grade $*" >> "$CALLS"\nexit "${GRADE_EXIT:-0}"\n')
    for f in (bin_dir / "sbatch", env_bin / "grade"):
        f.chmod(0o755)
    (tmp_path / "grade-class.sh").write_text(slurm.script(str(tmp_path / "class"), str(tmp_path / "out"), 4, 2,
                                                          str(tmp_path / "env"), False))

    def run(*args: str, **env: str) -> tuple[subprocess.CompletedProcess, list[str]]:
        calls = tmp_path / "calls"
        calls.unlink(missing_ok=True)
        calls.touch()
        r = subprocess.run(["bash", "grade-class.sh", *args], cwd=tmp_path, capture_output=True, text=True,
                           env={"PATH": f"{bin_dir}:/usr/bin:/bin", "CALLS": str(calls), **env})
        return r, calls.read_text().splitlines()

    return tmp_path, run


def test_submitting_sends_the_array_and_the_dependent_merge(stand_ins):
    folder, run = stand_ins
    r, calls = run()
    assert r.returncode == 0, r.stderr
    tasks, merge = calls
    assert "--array=1-4%2 --export=NONE" in tasks and f"--output={folder}/out/slurm/%x-%A_%a.out" in tasks
    assert "--gres=gpu:1 --cpus-per-task=4 --mem=32G --time=01:00:00" in tasks and tasks.endswith("grade-class.sh")
    assert "--dependency=afterok:41 --kill-on-invalid-dep=yes --export=NONE" in merge and "--gres" not in merge
    assert merge.endswith("grade-class.sh merge")
    assert "tasks: job 41, array 1-4 of 1..4; merge: job 42" in r.stdout
    assert (folder / "out" / "slurm").is_dir()
    r, calls = run("2,4")
    assert r.returncode == 0 and "--array=2,4%2" in calls[0]


@pytest.mark.parametrize("tasks", ["0-3", "5", "2-1", "x", "1-4,0"])
def test_tasks_outside_the_shards_are_refused_before_anything_is_submitted(stand_ins, tasks):
    _, run = stand_ins
    r, calls = run(tasks)
    assert r.returncode == 2 and calls == [] and "give tasks among 1..4" in r.stderr


def test_a_task_grades_its_shard_and_a_task_outside_them_refuses(stand_ins):
    folder, run = stand_ins
    r, calls = run(SLURM_ARRAY_TASK_ID="2", ENVIRONMENT="BATCH")
    assert r.returncode == 0, r.stderr
    assert calls == [f"grade batch {folder}/class --out {folder}/out --shard 2/4"]
    r, calls = run(SLURM_ARRAY_TASK_ID="0", ENVIRONMENT="BATCH")
    assert r.returncode == 2 and calls == []
    assert "array task 0 is outside 1..4" in r.stderr and "--array=1-4" in r.stderr
    r, calls = run(ENVIRONMENT="BATCH")  # sbatch grade-class.sh, no array
    assert r.returncode == 2 and "not with sbatch" in r.stderr and calls == []


def test_no_gpu_fails_a_task_unless_no_gpu_ok(stand_ins):
    folder, run = stand_ins
    r, _ = run(SLURM_ARRAY_TASK_ID="1", GRADE_EXIT="3")
    assert r.returncode == 3 and "check TASK's --gres line" in r.stderr
    script = folder / "grade-class.sh"
    script.write_text(script.read_text().replace("NO_GPU_OK=0", "NO_GPU_OK=1"))
    r, _ = run(SLURM_ARRAY_TASK_ID="1", GRADE_EXIT="3")
    assert r.returncode == 0 and "NO_GPU_OK=1 counts the task as done" in r.stdout
    r, _ = run(SLURM_ARRAY_TASK_ID="1", GRADE_EXIT="4")  # incomplete (a time limit): the merge must not run
    assert r.returncode == 4


def test_the_merge_expects_the_class_and_the_shards(stand_ins):
    folder, run = stand_ins
    r, calls = run("merge", GRADE_EXIT="4")
    assert r.returncode == 4
    assert calls == [f"grade merge {folder}/out/gradebook {folder}/out --expect {folder}/class --shards 4"]


def test_a_job_without_the_graders_environment_says_so(stand_ins):
    folder, run = stand_ins
    (folder / "env" / "bin" / "grade").unlink()
    r, calls = run(SLURM_ARRAY_TASK_ID="1")
    assert r.returncode == 2 and "no `grade` command in" in r.stderr and "set GRADER_ENV" in r.stderr


# --- the route on a real Slurm ---------------------------------------------------------------------------------
def test_the_route_on_a_one_node_slurm():
    """tests/slurm_check.py: the script, a cancelled task and its resubmission, a lost shard, a dropped
    submission and the single-node job on a real Slurm (its docstring)."""
    reason = slurm_check.cannot_run()
    if reason:
        if os.environ.get("GRADER_REQUIRE_SLURM"):
            pytest.fail(f"GRADER_REQUIRE_SLURM is set, but {reason}")
        pytest.skip(reason)
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "slurm_check.py")], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=HARNESS_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.terminate()  # SIGTERM: the harness stops its daemons
        out, _ = proc.communicate(timeout=120)
    print(out)
    assert proc.returncode == 0, out[-6000:]
    assert "every check held" in out
