"""The `grade` command's exit codes and messages on a machine without a GPU (CI)."""

import json
import re

import pytest

from conftest import SUBMISSIONS
from grader.cli import main
from grader.core.errors import EXIT_FAIL, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_NO_GPU, NoGpuError
from grader.gpu.device import open_gpu


def has_gpu() -> bool:
    try:
        open_gpu()
        return True
    except NoGpuError:
        return False


no_gpu_only = pytest.mark.skipif(has_gpu(), reason="checks the no-GPU path; this machine has a GPU")


def test_missing_file_is_input_error(capsys):
    assert main(["does/not/exist.cu"]) == EXIT_INPUT
    assert "no such file" in capsys.readouterr().err


def test_no_arguments_is_usage_error(capsys):
    assert main([]) == EXIT_INPUT
    assert "give a .cu file" in capsys.readouterr().err


def test_bad_grade_block_is_input_error(tmp_path, capsys):
    p = tmp_path / "s.cu"
    p.write_text("// grade: block = 100\n__global__ void biasGeluFused() {}\n")
    assert main([str(p)]) == EXIT_INPUT
    assert "s.cu:1: block: 100 is not a multiple of 32" in capsys.readouterr().err


def test_compile_error_is_a_fail_with_file_line(capsys):
    assert main([str(SUBMISSIONS / "compile_error.cu")]) == EXIT_FAIL
    out = capsys.readouterr().out
    assert "Verdict: ERROR" in out and "compile_error.cu:6: error:" in out


def test_parameter_mismatch_prints_both_lists(tmp_path, capsys):
    p = tmp_path / "s.cu"
    p.write_text("__global__ void biasGeluFused(const float* x, float* out, size_t cols) {}\n")
    assert main([str(p)]) == EXIT_FAIL
    out = capsys.readouterr().out
    assert "kernel:   biasGeluFused(const float* x, float* out, size_t cols)" in out
    assert "expected: biasGeluFused(const float* x, const float* bias, float* out, int|size_t cols)" in out


@no_gpu_only
def test_no_gpu_gives_exit_3_and_one_line_reason(capsys):
    assert main([str(SUBMISSIONS / "gold_float4.cu")]) == EXIT_NO_GPU
    verdict = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Verdict:")]
    assert len(verdict) == 1 and "no GPU" in verdict[0]


@no_gpu_only
def test_json_output_is_one_report(capsys):
    assert main([str(SUBMISSIONS / "gold_float4.cu"), "--json"]) == EXIT_NO_GPU
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "no-gpu" and report["compile"]["arch"] == "sm_90"
    assert report["contract"]["row"]["gbs"] == 4124.5


def test_json_schema(capsys):
    assert main(["--json-schema"]) == 0
    assert "GradeReport" in json.loads(capsys.readouterr().out)["title"]



def test_gradescope_format(capsys):
    assert main([str(SUBMISSIONS / "compile_error.cu"), "--format", "gradescope"]) == EXIT_FAIL
    results = json.loads(capsys.readouterr().out)
    assert results["score"] == 0 and results["tests"][0]["status"] == "failed"
    assert "compile_error.cu:6" in results["tests"][0]["output"]
    assert results["execution_time"] >= 0 and "leaderboard" not in results  # timed by grade, never ranked


def test_gradescope_refusal_for_unreadable_input(capsys):
    assert main(["missing.cu", "--format", "gradescope"]) == EXIT_INPUT
    results = json.loads(capsys.readouterr().out)
    assert results["score"] == 0 and "no such file" in results["output"]


def test_refused_include_is_a_report_with_verdict_error(tmp_path, capsys):
    p = tmp_path / "s.cu"
    p.write_text('#include "/etc/passwd"\n__global__ void biasGeluFused(const float* x, const float* b, float* o, '
                 'size_t c) {}\n')
    assert main([str(p), "--json"]) == EXIT_FAIL
    report = json.loads(capsys.readouterr().out)
    assert (report["verdict"], report["stage"]) == ("error", "source")
    assert "s.cu:1: refused `#include`" in report["reason"]


@pytest.mark.parametrize("arch", ["sm90", "90", "compute_90", "sm_9", "sm_1000", "SM_90", "sm_90 ", "sm_90ab"])
def test_bad_arch_is_a_usage_error(arch, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["x.cu", "--arch", arch])
    assert exit_.value.code == EXIT_INPUT and "--arch" in capsys.readouterr().err


@pytest.mark.parametrize("arch", ["sm_90", "sm_90a", "sm_100a", "sm_120"])
def test_good_arch_reaches_the_grader(arch, capsys):
    assert main(["does/not/exist.cu", "--arch", arch]) == EXIT_INPUT
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("seed", ["-1", str(2**63), "1.5", "abc"])
def test_bad_seed_is_a_usage_error(seed, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["x.cu", f"--seed={seed}"])
    assert exit_.value.code == EXIT_INPUT and "--seed" in capsys.readouterr().err


@pytest.mark.parametrize("seed", ["0", str(2**63 - 1)])
def test_seed_range_ends_are_accepted(seed, capsys):
    assert main(["does/not/exist.cu", "--seed", seed]) == EXIT_INPUT


def test_json_format_reports_an_input_error_as_one_json_object(capsys):
    assert main(["does/not/exist.cu", "--format", "json"]) == EXIT_INPUT
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["verdict"] == "error" and report["stage"] == "input" and report["file"] == "exist.cu"
    assert "no such file" in report["reason"] and "no such file" in captured.err


def test_json_format_reports_a_malformed_grade_block(tmp_path, capsys):
    p = tmp_path / "s.cu"
    p.write_text("// Grade: grid = flat\n__global__ void biasGeluFused() {}\n")
    assert main([str(p), "--json"]) == EXIT_INPUT
    report = json.loads(capsys.readouterr().out)
    assert report["stage"] == "input" and "s.cu:1:" in report["reason"]


def test_text_format_input_error_prints_nothing_on_stdout(capsys):
    assert main(["does/not/exist.cu"]) == EXIT_INPUT
    assert capsys.readouterr().out == ""


def _closed_reader(*args):
    """Run `grade ARGS` with a stdout pipe whose reader is gone before anything is written (`| head -0`)."""
    import subprocess
    import sys

    code = "import sys; from grader.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err


def test_closed_pipe_is_not_a_traceback():
    rc, err = _closed_reader("--json-schema")
    assert rc == 0 and "BrokenPipe" not in err and "Traceback" not in err, err
    rc, err = _closed_reader(str(SUBMISSIONS / "compile_error.cu"))
    assert rc == EXIT_FAIL and "BrokenPipe" not in err and "Traceback" not in err, err


def test_open_pipe_still_gets_the_output():
    import subprocess
    import sys

    code = "import sys; from grader.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", code, "--json-schema"], capture_output=True, timeout=120)
    assert done.returncode == 0 and "GradeReport" in json.loads(done.stdout)["title"]


# --- the command tree: help, typos, the `file` command, --json, Ctrl-C ----------------------------------------
ALL_CODES = (0, 1, 2, 3, 4, 5, 130)


def help_of(capsys, *argv: str) -> str:
    """What `grade ARGV` (an -h) prints on stdout; it exits 0."""
    with pytest.raises(SystemExit) as exit_:
        main(list(argv))
    assert exit_.value.code == 0
    return capsys.readouterr().out


def exit_codes_listed(text: str) -> set[int]:
    table = text[text.index("exit codes"):]
    return {int(m.group(1)) for m in re.finditer(r"^  (\d+) +\S", table, re.MULTILINE)}


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_lists_every_command_and_every_exit_code(flag, capsys):
    out = help_of(capsys, flag)
    usage = out.splitlines()[0]
    assert usage.startswith("usage: grade") and "{FILE,selfcheck,batch,merge,slurm-script,cache}" in usage
    assert "[file]" not in usage
    commands = out[out.index("commands"):out.index("exit codes")]
    for form in ("FILE [options]", "selfcheck [options]", "batch PATH... [options]", "merge OUT RESULTS...",
                 "slurm-script [options]"):
        assert re.search(rf"^  {re.escape(form)}  +\S", commands, re.MULTILINE), form
    assert exit_codes_listed(out) == set(ALL_CODES)
    assert "interrupted (Ctrl-C)" in out


@pytest.mark.parametrize("argv, codes", [
    (["file", "-h"], ALL_CODES), (["x.cu", "-h"], ALL_CODES), (["selfcheck", "-h"], (0, 1, 2, 3, 4, 130)),
    (["batch", "-h"], (0, 2, 3, 4, 130)), (["merge", "-h"], (0, 2, 4, 130)), (["cache", "-h"], (0, 1, 2, 130)),
    (["slurm-script", "-h"], (0, 2)),
])
def test_every_commands_help_lists_its_exit_codes(argv, codes, capsys):
    assert exit_codes_listed(help_of(capsys, *argv)) == set(codes)


def test_a_commands_help_is_its_own_modules_parser(capsys):
    from grader.batch.command import batch_parser, merge_parser
    from grader.cli import single_parser
    from reference_kernels.selfcheck import parser as selfcheck_parser

    for argv, own in ((["batch", "-h"], batch_parser()), (["merge", "-h"], merge_parser()),
                      (["selfcheck", "-h"], selfcheck_parser()), (["file", "-h"], single_parser())):
        assert help_of(capsys, *argv) == own.format_help(), argv


def test_the_tree_holds_every_command():
    from grader.cli import NAMES, parser

    tree = parser()
    forms = {"file": ["x.cu"], "selfcheck": ["--no-timing"], "batch": ["class/"], "merge": ["out", "r.jsonl"],
             "cache": ["--clear"], "slurm-script": ["--shards", "2"]}
    assert set(forms) == set(NAMES)
    for name, rest in forms.items():
        args = tree.parse_args([name, *rest])
        assert args.command == name and callable(args.command_run) and args.command_parser.prog.startswith("grade")
    assert tree.parse_args(["file", "x.cu", "--json"]).format == "json"


@pytest.mark.parametrize("argv, message", [
    (["selfchek"], "'selfchek' is neither a file nor a command; did you mean `grade selfcheck`?"),
    (["bacth"], "did you mean `grade batch`?"),
    (["--json", "selfchek"], "did you mean `grade selfcheck --json`?"),
    (["grdae", "x.cu"], "'grdae' is not a command (the commands: file, selfcheck, batch, merge"),
    (["grdae", "x.cu"], "did you mean `grade x.cu`?"),
    (["merg", "out", "r.jsonl"], "did you mean `grade merge out r.jsonl`?"),
    (["batc", "class/", "--out", "r"], "did you mean `grade batch class/ --out r`?"),
])
def test_a_mistyped_command_gets_did_you_mean(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # none of the words is a file here
    assert main(argv) == EXIT_INPUT
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1 and "grade batch grdae" not in captured.err


def test_a_word_that_is_no_file_before_more_words_is_not_a_command(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["foo", "bar"]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert "'foo' is not a command" in err and "did you mean" not in err and "grade batch" not in err


def test_no_did_you_mean_for_an_existing_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "selfchek").write_text((SUBMISSIONS / "gold_float4.cu").read_text())
    assert main(["selfchek"]) == EXIT_INPUT  # graded as the file it is: refused for its name
    err = capsys.readouterr().err
    assert "selfchek: not a .cu file (no extension)" in err and "did you mean" not in err
    with pytest.raises(SystemExit) as exit_:
        main(["selfchek", "b.cu"])
    assert exit_.value.code == EXIT_INPUT and "grade batch selfchek b.cu --out results" in capsys.readouterr().err


def test_a_missing_cu_file_is_still_no_such_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["selfcheck.cu"]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert "selfcheck.cu: no such file" in err and "did you mean" not in err


def test_grade_file_grades_a_file_named_like_a_command(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "batch").write_text((SUBMISSIONS / "gold_float4.cu").read_text())
    assert main(["file", "batch"]) == EXIT_INPUT  # the file named batch, refused for its name (it is no .cu)
    captured = capsys.readouterr()
    assert "batch: not a .cu file (no extension)" in captured.err and "grade batch:" not in captured.err
    assert main(["file", "selfchek"]) == EXIT_INPUT  # `file` named: no "did you mean"
    assert "selfchek: no such file" in capsys.readouterr().err


@no_gpu_only
def test_grade_file_is_grade(capsys):
    assert main(["file", str(SUBMISSIONS / "gold_float4.cu"), "--json"]) == EXIT_NO_GPU
    assert json.loads(capsys.readouterr().out)["verdict"] == "no-gpu"


def test_an_unknown_option_is_reported_by_the_commands_parser(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["batch", "x", "--bogus"])
    err = capsys.readouterr().err
    assert exit_.value.code == EXIT_INPUT and "grade batch: error: unrecognized arguments: --bogus" in err
    with pytest.raises(SystemExit):
        main(["x.cu", "--out", "r"])
    assert "grade: error: unrecognized arguments: --out r" in capsys.readouterr().err


@no_gpu_only
def test_selfcheck_json_is_the_result_on_stdout(capsys):
    assert main(["selfcheck", "--json", "--no-timing"]) == EXIT_NO_GPU
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert result["gpu"] is None and result["arch"] == "sm_90" and result["gates"] == []
    assert "Byte counts" in captured.err and "GELU gap" in captured.err and "grade selfcheck: no GPU" in captured.err


def test_ctrl_c_is_exit_130_with_one_line(monkeypatch, capsys):
    from reference_kernels import selfcheck

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(selfcheck, "_run", interrupted)
    assert main(["selfcheck"]) == EXIT_INTERRUPTED
    assert capsys.readouterr().err.strip() == "grade: interrupted (Ctrl-C)"


def test_python_dash_m_grader_reads_the_same_tree():
    import subprocess
    import sys

    from conftest import ROOT

    r = subprocess.run([sys.executable, "-m", "grader", "selfchek"], capture_output=True, text=True, timeout=120,
                       cwd=ROOT)
    assert r.returncode == EXIT_INPUT and "did you mean `grade selfcheck`?" in r.stderr
    r = subprocess.run([sys.executable, "-m", "grader", "--help"], capture_output=True, text=True, timeout=120,
                       cwd=ROOT)
    assert r.returncode == 0 and "{FILE,selfcheck,batch,merge,slurm-script,cache}" in r.stdout
    assert "130" in r.stdout


@pytest.mark.parametrize("argv", [["x.cu", "--json", "--arch", "sm_20"], ["--json", "--bogus", "x.cu"],
                                  ["x.cu", "--format=json", "--run-limit", "-1"], ["x.cu", "y.cu", "--json"]])
def test_a_usage_error_with_json_is_still_one_report(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert stop.value.code == 2 and (report["verdict"], report["stage"]) == ("error", "input")
    assert report["file"] == "x.cu" and report["reason"].startswith("usage error: ") and "error:" in out.err


def test_a_usage_error_for_gradescope_is_not_graded_not_a_zero_for_the_student(capsys):
    with pytest.raises(SystemExit):
        main(["kernel.cu", "--format", "gradescope", "--seed", "-5"])
    results = json.loads(capsys.readouterr().out)
    assert results["output"].startswith("not graded: the grader was called wrongly (usage error: argument --seed")
    assert results["extra_data"] == {"graded": False}


def test_selfcheck_checks_its_arch_as_grade_does(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["selfcheck", "--arch", "sm_20"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "sm_20 is not among the targets the installed NVRTC" in err
