"""The `grade` command (argparse).

  grade FILE.cu [--format text|json|gradescope] [--seed N] [--arch sm_XY] [--device N]   grade one file
  grade --json-schema                                                print the JSON schema of --json's output
  grade selfcheck [...]                                              run the reference-kernel suite
  grade batch PATH... [...]                                          grade a class (see `grade batch -h`)

--arch takes sm_NN or sm_NNa (e.g. sm_90, sm_90a, sm_100a); --seed a whole number in [0, 2**63). With
--format json an input error still prints one GradeReport (verdict "error", stage "input") on stdout.

Exit codes (grader.errors): 0 gold or silver; 1 fail or error; 2 input or usage error; 3 no GPU (every
check that needs no GPU ran and passed); 4 not graded through no fault of the submission (the install lacks
its CUDA extra, or a CUDA call of the grader's own failed); 5 not graded, the GPU was busy.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import grader
from grader import exercise
from grader.errors import (EXIT_BUSY, EXIT_FAIL, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_NO_GPU, EXIT_PASS, GraderError,
                           GraderFault, Stage, stopped_in)
from grader.options import arch_type, positive_seconds, seed_type
from grader.text import printable

EXIT_BY_VERDICT = {"gold": EXIT_PASS, "silver": EXIT_PASS, "fail": EXIT_FAIL, "error": EXIT_FAIL,
                   "no-gpu": EXIT_NO_GPU, "busy": EXIT_BUSY}

EPILOG = """exit codes: 0 gold or silver; 1 fail or error (wrong output, too slow, compile error, refused or
faulting kernel); 2 input or usage error; 3 no GPU (static checks passed; verification and timing need one);
4 not graded, not the submission's fault (install without its CUDA extra, or the grader's own CUDA call failed);
5 not graded: the GPU was busy while timing (run again)"""


def _emit(text: str) -> bool:
    """Print `text` to stdout and flush. Returns False when the reader has gone (`grade ... | head`): stdout
    is then pointed at the null device so that Python's exit flush cannot fail again (Python docs, "Note
    on SIGPIPE")."""
    try:
        print(text)
        sys.stdout.flush()
        return True
    except BrokenPipeError:
        _silence_stdout()
        return False


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout replaced (tests) or already closed
        pass


def single_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="grade",
        description=f"Compile, verify, time and grade a {exercise.KERNEL_NAME} submission "
        "(other commands: grade selfcheck, grade batch, grade merge; each takes -h).",
        epilog=EPILOG,
    )
    p.add_argument("file", nargs="?", help="the submission's .cu file")
    p.add_argument("more", nargs="*", help=argparse.SUPPRESS)  # a second file: pointed to `grade batch`
    p.add_argument("--version", action="version", version=f"grade {grader.__version__}")
    p.add_argument("--format", choices=("text", "json", "gradescope"), default="text",
                   help="text report (default); json: one GradeReport (schema: grade --json-schema); "
                        "gradescope: Gradescope's results.json")
    p.add_argument("--json", action="store_const", const="json", dest="format", help="same as --format json")
    p.add_argument("--json-schema", action="store_true", help="print the JSON schema of --json's output and exit")
    p.add_argument("--seed", type=seed_type,
                   help="replay the inputs of an earlier run (its report gives the seed); 0 .. 2**63 - 1")
    p.add_argument("--arch", type=arch_type, default=None,
                   help="compile target when no GPU is present, like sm_90 or sm_90a (default sm_90)")
    p.add_argument("--device", type=int, default=0, help="CUDA device index (default 0)")
    p.add_argument("--counters", action="store_true",
                   help="also measure the DRAM and L2 bytes the kernel moves with Nsight Compute (ncu; one profiled "
                        "launch of it and of the copy at the benchmark shape; never changes the verdict)")
    p.add_argument("--run-limit", type=positive_seconds, default=None, metavar="S",
                   help="seconds a stage (compile, verify) may run before grading stops with an error; timing "
                        "gets S plus its waits for a quiet GPU (default 60)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `grade` console script; returns the exit code."""
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except BrokenPipeError:  # a subcommand's output went to a reader that stopped reading
        _silence_stdout()
        return EXIT_FAIL


def _main(argv: list[str]) -> int:
    if argv and argv[0] == "selfcheck":
        from reference_kernels.selfcheck import main as selfcheck_main

        return selfcheck_main(argv[1:])
    if argv and argv[0] in ("batch", "merge"):
        from grader.batch import main as batch_main

        return batch_main(argv)
    parser = single_parser()
    args = parser.parse_args(argv)
    if args.more:
        files = " ".join([args.file, *args.more])
        parser.error(f"grade takes one file; to grade {1 + len(args.more)} files use: "
                     f"grade batch {files} --out results")
    if args.json_schema:
        from grader.report import GradeReport

        _emit(json.dumps(GradeReport.model_json_schema(), indent=2))
        return EXIT_PASS
    if not args.file:
        single_parser().print_usage(sys.stderr)
        print("grade: error: give a .cu file to grade", file=sys.stderr)
        return EXIT_INPUT
    from grader import sandbox
    from grader.grade import grade_file
    from grader.gradescope import gradescope_not_graded, gradescope_refusal, gradescope_results
    from grader.report import error_report, render_text
    from grader.terminal import StageLine

    from grader.toolkit import install_problem

    box = sandbox.state()
    if not box.available and install_problem() is None:  # else grading stops on the install, with the fix
        print(f"grade: warning: no sandbox around NVRTC here ({box.reason}); the include filter alone keeps "
              "a file from reading this machine's files", file=sys.stderr)
    from grader.watchdog import DEFAULT_RUN_LIMIT_S, Watchdog, stage_limits

    report_fd = os.dup(1)  # the report's stream, whatever a kernel's output capture does to descriptor 1

    def expired(stage: str, seconds: float) -> None:
        reason = (f"run time limit exceeded: the {stage} stage was still running after {seconds:.0f} s (a kernel "
                  "that never ends?); `grade --run-limit S` changes the limit")
        print(f"grade: {reason}", file=sys.stderr, flush=True)
        late = error_report(args.file, stopped_in(stage), reason)
        text = {"json": late.model_dump_json(indent=2), "gradescope": json.dumps(gradescope_results(late), indent=2)}
        if args.format in text:
            os.write(report_fd, (text[args.format] + "\n").encode())

    dog = Watchdog(stage_limits(args.run_limit or DEFAULT_RUN_LIMIT_S), expired).start()
    try:
        with StageLine(args.file) as show_stage:
            def on_stage(name: str) -> None:
                dog.stage(name)
                show_stage(name)

            report = grade_file(args.file, arch=args.arch, seed=args.seed, device_id=args.device, on_stage=on_stage)
    except KeyboardInterrupt:
        print("grade: interrupted (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except GraderError as err:
        print(f"grade: {printable(str(err), None)}", file=sys.stderr)
        if args.format == "gradescope":
            results = gradescope_not_graded(f"not graded: {err}") if isinstance(err, GraderFault) \
                else gradescope_refusal(str(err))
            _emit(json.dumps(results, indent=2))
        elif args.format == "json":
            refusal = error_report(args.file, getattr(err, "stage", None) or Stage.INPUT, str(err),
                                   getattr(err, "details", ""))
            _emit(refusal.model_dump_json(indent=2))
        return err.exit_code
    finally:
        dog.stop()
        os.close(report_fd)
    if args.counters:
        from grader.counters import Counters, submission_counters, verdict_allows

        why_not = verdict_allows(report)
        report.counters = Counters(unavailable=why_not) if why_not else \
            submission_counters(args.file, report.bench_rows, report.bench_cols, device=args.device)
    if args.format == "gradescope":
        _emit(json.dumps(gradescope_results(report), indent=2))
    else:
        _emit(report.model_dump_json(indent=2) if args.format == "json" else render_text(report))
    return EXIT_BY_VERDICT[report.verdict]


if __name__ == "__main__":
    sys.exit(main())
