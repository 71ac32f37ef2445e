"""The `grade` command: one argparse tree (parser()) of six commands, each with its own -h.

  grade FILE [--format text|json|gradescope] [--seed N] [--arch sm_XY] [--device N] ...   grade one file
  grade file FILE [...]                      the same: for a file named like a command (`grade file batch`)
  grade --json-schema                        print the JSON schema of --json's output
  grade selfcheck [...]                      run the reference-kernel suite (reference_kernels.selfcheck, an
                                             entry point of the group grade.commands: command_entry_point)
  grade batch PATH... [...]                  grade a class (grader.batch.command)
  grade merge OUT RESULTS...                 join the results of batch shards into one gradebook
  grade slurm-script [...]                   print the Slurm job script of a class (grader.batch.slurm)
  grade cache [--clear]                      the folder of the grader's own compiled kernels
                                             (grader.compile.kernel_cache)

`file` is the default command: main() puts it in front of the arguments when the first is neither a command
nor -h, --help or --version. Each command's parser is its own module's (single_parser here, batch_parser,
merge_parser, reference_kernels.selfcheck.parser through its entry point), adopted into the tree with
`parents=`, so `grade batch -h` is the batch's own help; main() builds only the command it runs, so
`grade FILE` imports neither the batch nor the self-check. A first word that is no file and close to a
command's name gets "did you mean" (command_typo); one that is no file and is followed by more words is not
taken for a file.

One grammar for every command. --json means one thing everywhere: the command's result as one JSON document on
stdout instead of the text (a GradeReport for `grade FILE`; the SelfcheckResult for `grade selfcheck`; a
grader.batch.reply.ClassRun for `grade batch` and `grade merge`; the folder and its entries for `grade cache`),
progress and warnings on stderr; a usage error then still prints one document (for `grade FILE` a GradeReport,
verdict "error", stage "input"). --format takes the words of grader.core.options.FORMATS, each meaning the same in
every command that takes it (text, json: the same as --json, gradescope), and --format gradescope never leaves
Gradescope without its results.json. --arch takes sm_NN or sm_NNa (e.g. sm_90, sm_90a, sm_100a); --seed a whole
number in [0, 2**63).

Exit codes: grader.core.errors, and the README's table; every command's -h lists its own. They tell "done" (0; 3 for
no GPU) from "did nothing" (2: a usage or input error, nothing written; `grade cache --clear` that found nothing to
remove: 1) and "not finished" (4: run again).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import grader
from grader import exercises
from grader.compile.toolkit import arch_type
from grader.core.errors import (
    EXIT_BUSY,
    EXIT_FAIL,
    EXIT_GRADER,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_NO_GPU,
    EXIT_PASS,
    GraderError,
    GraderFault,
    Stage,
    exit_codes_help,
    stopped_in,
)
from grader.core.options import HelpFormatter, add_format_options, positive_seconds, seed_type
from grader.core.text import printable

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

EXIT_BY_VERDICT = {"gold": EXIT_PASS, "silver": EXIT_PASS, "fail": EXIT_FAIL, "error": EXIT_FAIL,
                   "no-gpu": EXIT_NO_GPU, "busy": EXIT_BUSY}

EXIT_CODES = (EXIT_PASS, EXIT_FAIL, EXIT_INPUT, EXIT_NO_GPU, EXIT_GRADER, EXIT_BUSY, EXIT_INTERRUPTED)
"""The codes `grade FILE` can exit with (their meanings: grader.core.errors.EXIT_MEANING)."""

Run = Callable[[argparse.Namespace, argparse.ArgumentParser], int]


@dataclass(frozen=True)
class Command:
    """A command of `grade`: its `name`, the `form` and one-line `summary` that `grade -h` lists, and `load`,
    which imports its module and returns its parser and the function that runs it on the parsed arguments."""

    name: str
    form: str
    summary: str
    load: Callable[[], tuple[argparse.ArgumentParser, Run]]


def _file() -> tuple[argparse.ArgumentParser, Run]:
    return single_parser(), run_file


COMMAND_GROUP = "grade.commands"
"""The entry-point group of the commands another package of the project adds to `grade` (pyproject.toml:
`selfcheck = "reference_kernels.selfcheck:command"`): each names a function that returns the command's parser
and the function that runs it, so the grader never imports reference_kernels (tests/test_layers.py)."""

DISTRIBUTION = "biasgelu-grader"
"""The project's name in its pyproject.toml (the tree's own, read when the install's metadata lacks a command)."""


def command_entry_point(name: str, root: Path | None = None) -> EntryPoint | None:
    """The COMMAND_GROUP entry point called `name`: the installed metadata's, else the one in the pyproject.toml
    of the tree this grader was imported from (`root`, default the folder above grader/: a checkout run
    without installing, or installed before the entry point was added). None when neither has it."""
    from importlib.metadata import entry_points

    found = list(entry_points(group=COMMAND_GROUP, name=name))
    if found:
        return found[0]
    return tree_entry_points(root or Path(__file__).resolve().parent.parent).get(name)


def tree_entry_points(root: Path) -> dict[str, EntryPoint]:
    """The COMMAND_GROUP entry points of root/pyproject.toml, by name; none when the file is missing, unreadable
    or another project's."""
    import tomllib
    from importlib.metadata import EntryPoint

    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    if project.get("name") != DISTRIBUTION:
        return {}
    group = project.get("entry-points", {}).get(COMMAND_GROUP, {})
    return {n: EntryPoint(name=n, value=v, group=COMMAND_GROUP) for n, v in group.items() if isinstance(v, str)}


def _entry_point_command(name: str) -> Callable[[], tuple[argparse.ArgumentParser, Run]]:
    """The `load` of command `name`, provided through COMMAND_GROUP (command_entry_point): its function's
    (parser, run). Where there is none, or it does not import, a stand-in whose run says why on stderr and
    returns EXIT_GRADER (the install, not the user)."""
    def load() -> tuple[argparse.ArgumentParser, Run]:
        entry = command_entry_point(name)
        try:
            if entry is not None:
                return entry.load()()
            why = f"no `{name}` entry point in the group {COMMAND_GROUP!r} (pyproject.toml)"
        except ImportError as err:
            why = f"its module does not import ({err})"

        def missing(_args: argparse.Namespace, _parser: argparse.ArgumentParser) -> int:
            print(f"grade {name}: not available in this install: {why}; reinstall the grader (pip install -e .)",
                  file=sys.stderr)
            return EXIT_GRADER

        return argparse.ArgumentParser(prog=f"grade {name}"), missing

    return load


def _batch() -> tuple[argparse.ArgumentParser, Run]:
    from grader.batch import command as batch

    return batch.batch_parser(), batch.run_batch


def _merge() -> tuple[argparse.ArgumentParser, Run]:
    from grader.batch import command as batch

    return batch.merge_parser(), batch.run_merge


def _slurm() -> tuple[argparse.ArgumentParser, Run]:
    from grader.batch import slurm

    return slurm.parser(), slurm.run


def _cache() -> tuple[argparse.ArgumentParser, Run]:
    from grader.compile import kernel_cache

    return kernel_cache.parser(), kernel_cache.run


COMMANDS = (
    Command("file", "FILE [options]", "grade one submission's .cu file; `grade file FILE` is the same (for a file "
            "named like a command), `grade file -h` lists its options", _file),
    Command("selfcheck", "selfcheck [options]", "compile the reference kernels, gate them against float64 and time "
            "them against the copy floor (the course page's report)", _entry_point_command("selfcheck")),
    Command("batch", "batch PATH... [options]", "grade a class, each submission in its own process, resumably",
            _batch),
    Command("merge", "merge OUT RESULTS...", "join the results of batch shards into one gradebook", _merge),
    Command("slurm-script", "slurm-script [options]", "print the Slurm job script that grades a class: an array of "
            "batch shards and a merge that waits for them", _slurm),
    Command("cache", "cache [--clear]", "show or empty the folder of the grader's own compiled kernels", _cache),
)
NAMES = tuple(c.name for c in COMMANDS)
TOP_WORDS = ("-h", "--help", "--version")
"""First arguments that `grade` itself reads (every other first word that is no command is `file`'s)."""
USAGE = "grade [-h] [--version] {FILE,selfcheck,batch,merge,slurm-script,cache} [options]"


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


def named(name: str) -> dict[str, str]:
    """The report fields that name exercise `name` and its kernel (for a report made before grading began)."""
    return {"exercise": name, "kernel": exercises.get(name).kernel_name}


def single_parser() -> argparse.ArgumentParser:
    """The parser of `grade FILE` (the `file` command): every option of grading one file."""
    p = argparse.ArgumentParser(
        prog="grade",
        description=f"Compile, verify, time and grade a {exercises.get().kernel_name} submission, or with --exercise "
        "one of another exercise (other commands: grade selfcheck, grade batch, grade merge; each takes -h).",
        epilog=exit_codes_help(*EXIT_CODES), formatter_class=HelpFormatter,
    )
    p.add_argument("file", nargs="?", metavar="FILE",
                   help="the submission's .cu file (`grade file NAME` grades a file named like a command)")
    p.add_argument("more", nargs="*", help=argparse.SUPPRESS)  # a second file: pointed to `grade batch`
    p.add_argument("--version", action="version", version=f"grade {grader.__version__}")
    add_format_options(p, ("text", "json", "gradescope"), {
        "text": "the text report (default)", "json": "one GradeReport on stdout (schema: grade --json-schema)"})
    p.add_argument("--json-schema", action="store_true", help="print the JSON schema of --json's output and exit")
    p.add_argument("--seed", type=seed_type,
                   help="replay the inputs of an earlier run (its report gives the seed); 0 .. 2**63 - 1")
    p.add_argument("--arch", type=arch_type, default=None,
                   help="compile target when no GPU is present, like sm_90 or sm_90a (default sm_90)")
    p.add_argument("--device", type=int, default=0, help="CUDA device index (default 0)")
    p.add_argument("--exercise", choices=exercises.names(), default=exercises.DEFAULT,
                   help=f"the exercise the file answers (default {exercises.DEFAULT}: "
                        f"{exercises.get().kernel_name}); one of " + ", ".join(
                            f"{n} ({exercises.get(n).kernel_name})" for n in exercises.names()))
    counted = p.add_mutually_exclusive_group()
    counted.add_argument("--counters", action="store_true",
                         help="also measure with Nsight Compute (ncu) the bytes the kernel moves, how its warps "
                              "access memory and the work they do, beside the page's answer, the model answer and "
                              "the copies (one profiled launch each at the benchmark shape; never changes the "
                              "verdict); measured unasked for a correct kernel under half the one-float copy")
    counted.add_argument("--no-counters", action="store_true",
                         help="never measure the counters, not even unasked for a slow kernel (the report's hints "
                              "then come from the machine code, the launch and the grading's copies alone)")
    p.add_argument("--run-limit", type=positive_seconds, default=None, metavar="S",
                   help="seconds a stage (compile, verify) may run before grading stops with an error; timing "
                        "gets S plus its waits for a quiet GPU (default 60)")
    return p


def parser(commands: Iterable[str] = NAMES) -> argparse.ArgumentParser:
    """The argument tree of `grade`: its own -h and --version, and a subparser for each of `commands` (main()
    asks for the one it runs only). A command's subparser is its module's parser adopted with `parents=`: the
    same options, prog, description and epilog, so its -h is unchanged; its defaults `command_run` and
    `command_parser` are the function that runs it and that subparser (which reports a bad option)."""
    width = max(len(c.form) for c in COMMANDS) + 2
    table = "\n".join(f"  {c.form:<{width}}{c.summary}" for c in COMMANDS)
    top = argparse.ArgumentParser(
        prog="grade", usage=USAGE, formatter_class=HelpFormatter,
        description=f"Compile, verify, time and grade a {exercises.get().kernel_name} submission (or one of another "
                    "exercise: --exercise), or a whole class.\n\n"
                    f"commands (each takes -h):\n{table}",
        epilog=exit_codes_help(*EXIT_CODES, title="exit codes of `grade FILE` (each command's -h lists its own)"))
    top.add_argument("--version", action="version", version=f"grade {grader.__version__}")
    subs = top.add_subparsers(dest="command", help=argparse.SUPPRESS)  # listed by the description's table
    for command in COMMANDS:
        if command.name in commands:
            own, run = command.load()
            sub = subs.add_parser(command.name, parents=[own], add_help=False, prog=own.prog, usage=own.usage,
                                  description=own.description, epilog=own.epilog,
                                  formatter_class=own.formatter_class)
            sub.set_defaults(command_run=run, command_parser=sub)
            _keep_errors(sub)
    return top


USAGE_ERRORS: list[str] = []
"""The messages a command's parser refused arguments with, in this process (_keep_errors)."""


def _keep_errors(p: argparse.ArgumentParser) -> None:
    """Make `p` note each usage error's message (USAGE_ERRORS) before argparse prints it and exits 2, so that
    _main can still print the one JSON document --json promises, and write the results.json --format gradescope
    promises."""
    refuse = p.error

    def error(message: str):
        USAGE_ERRORS.append(message)
        refuse(message)

    p.error = error  # type: ignore[method-assign]


def asked_format(argv: list[str]) -> str | None:
    """The report format `grade FILE ARGV` asks for, read from the raw words (for a usage error, when argparse
    could not parse them): 'json' for --json or --format json, 'gradescope' for --format gradescope, else None."""
    fmt = None
    for i, word in enumerate(argv):
        if word == "--json":
            fmt = "json"
        elif word == "--format" and i + 1 < len(argv):
            fmt = argv[i + 1]
        elif word.startswith("--format="):
            fmt = word.split("=", 1)[1]
    return fmt if fmt in ("json", "gradescope") else None


def _usage_report(argv: list[str], message: str, fmt: str) -> None:
    """The report of a usage error on stdout in `fmt` (json: a GradeReport, verdict error, stage input;
    gradescope: not graded, the autograder's command is wrong, not the student's file)."""
    from grader.output.gradescope import gradescope_not_graded
    from grader.output.report import error_report

    reason = f"usage error: {message}"
    if fmt == "json":
        files = [w for w in argv if w.lower().endswith(".cu")]
        _emit(error_report(os.path.basename(files[0]) if files else "", Stage.INPUT, reason).model_dump_json(indent=2))
    else:
        _emit(json.dumps(gradescope_not_graded(f"not graded: the grader was called wrongly ({reason})"), indent=2))


def _command_usage_report(command: str, argv: list[str], message: str, fmt: str) -> None:
    """The answer to a usage error of `grade COMMAND ARGV` (not `file`) that asked for `fmt`: with json, one
    document on stdout (batch and merge: a grader.batch.reply.ClassRun; others: command, exit_code, error); with
    `grade batch --format gradescope`, OUT/results.json saying "not graded" (the autograder's command is wrong,
    not the student's file)."""
    reason = f"usage error: {message}"
    if fmt == "json" and command in ("batch", "merge"):
        from grader.batch.reply import ClassRun

        _emit(ClassRun(command=command, exit_code=EXIT_INPUT, error=reason).model_dump_json(indent=2))
    elif fmt == "json":
        _emit(json.dumps({"command": command, "exit_code": EXIT_INPUT, "error": reason}, indent=2))
    elif fmt == "gradescope" and command == "batch":
        from grader.batch.outputs import Settled, write_outputs

        out = next((argv[i + 1] for i, w in enumerate(argv[:-1]) if w == "--out"), None) or next(
            (w.split("=", 1)[1] for w in argv if w.startswith("--out=")), "results")
        try:
            write_outputs(Path(out), Settled(gradescope=True, not_graded=f"not graded: the grader was called wrongly "
                                             f"({printable(reason, 300)}); tell the course staff"))
        except OSError:
            pass


def command_typo(word: str | None, more: list[str], argv: list[str]) -> str | None:
    """Why `grade ARGV` (no command named; `word` its first positional argument, `more` the others) is refused
    before grading, or None. `word` is the file unless it is no file and looks like a command: no path and not
    ending in .cu, alone and close to a command's name ("... is neither a file nor a command; did you mean
    `grade selfcheck`?"), or followed by more words ("... is not a command", with "did you mean" where a name is
    close: difflib). An existing path, a NAME.cu (missing or not: grading reports it) and a lone word close to
    no command are files."""
    if word is None or os.path.lexists(word) or word.lower().endswith(".cu"):
        return None
    close = difflib.get_close_matches(word, [*NAMES, "grade"] if more else NAMES, n=1)
    if not close and not more:
        return None
    shown = f"'{printable(word, 60)}'"
    meant = ""
    if close:
        rest = list(argv)
        rest.remove(word)
        suggestion = shlex.join(rest if close[0] == "grade" else [close[0], *rest])  # `grade grade x.cu`: once
        meant = f"; did you mean `{printable(f'grade {suggestion}'.strip(), 120)}`?"
    if not more:
        return f"{shown} is neither a file nor a command{meant}"
    return f"{shown} is not a command (the commands: {', '.join(NAMES)}; `grade -h` lists them){meant}"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `grade` console script (and `python -m grader`); returns the exit code."""
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except BrokenPipeError:  # a subcommand's output went to a reader that stopped reading
        _silence_stdout()
        return EXIT_FAIL
    except KeyboardInterrupt:  # grade FILE and a batch's grading catch their own; this is everywhere else
        print("grade: interrupted (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED


def _main(argv: list[str]) -> int:
    implied = not argv or argv[0] not in (*NAMES, *TOP_WORDS)
    if implied:
        argv = ["file", *argv]
    USAGE_ERRORS.clear()
    try:
        args, extra = parser(argv[:1]).parse_known_args(argv)
        typo = command_typo(args.file, args.more, argv[1:]) if implied else None
        if typo:
            print(f"grade: {typo}", file=sys.stderr)
            return EXIT_INPUT
        if extra:  # as parse_args reports them, but by the command's own parser (its prog, its usage)
            args.command_parser.error(f"unrecognized arguments: {' '.join(extra)}")
        return args.command_run(args, args.command_parser)
    except SystemExit as stop:  # argparse's usage error: --json and --format gradescope still get their report
        fmt = asked_format(argv[1:]) if argv[0] in NAMES else None
        if stop.code == EXIT_INPUT and USAGE_ERRORS and fmt:
            if argv[0] == "file":
                _usage_report(argv[1:], USAGE_ERRORS[-1], fmt)
            else:
                _command_usage_report(argv[0], argv[1:], USAGE_ERRORS[-1], fmt)
        raise


def run_file(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """`grade FILE` on arguments parsed by single_parser() (or its copy in the tree, `parser`); returns the exit
    code."""
    if args.more:
        files = " ".join([args.file, *args.more])
        parser.error(f"grade takes one file; to grade {1 + len(args.more)} files use: "
                     f"grade batch {files} --out results")
    if args.json_schema:
        from grader.output.report import GradeReport

        _emit(json.dumps(GradeReport.model_json_schema(), indent=2))
        return EXIT_PASS
    if not args.file:
        print(f"usage: {USAGE}\ngrade: error: give a .cu file to grade, or a command (grade -h lists them)",
              file=sys.stderr)
        return EXIT_INPUT
    from grader.compile import sandbox
    from grader.compile.toolkit import install_problem
    from grader.output.report import error_report
    from grader.output.terminal import StageLine
    from grader.pipeline.grade import add_counters, grade_file

    box = sandbox.state()
    if not box.available and install_problem() is None:  # else grading stops on the install, with the fix
        print(f"grade: warning: no sandbox around NVRTC here ({box.reason}); the include filter alone keeps "
              "a file from reading this machine's files", file=sys.stderr)
    from grader.pipeline.watchdog import DEFAULT_RUN_LIMIT_S, Watchdog, stage_limits

    report_fd = os.dup(1)  # the report's stream, whatever a kernel's output capture does to descriptor 1
    shown = os.path.basename(os.path.normpath(args.file)) or args.file  # the report names the file, not its folder

    def expired(stage: str, seconds: float) -> None:
        likely = "a template or constexpr that NVRTC cannot finish?" if stage == Stage.COMPILE else \
            "a kernel that never ends?"
        reason = (f"run time limit exceeded: the {stage} stage was still running after {seconds:.0f} s ({likely}); "
                  "`grade --run-limit S` changes the limit")
        print(f"grade: {reason}", file=sys.stderr, flush=True)
        if args.format != "text":  # the text report is the stderr line
            late = error_report(shown, stopped_in(stage), reason, **named(args.exercise))
            os.write(report_fd, (rendered(args.format, late) + "\n").encode())

    dog = Watchdog(stage_limits(args.run_limit or DEFAULT_RUN_LIMIT_S), expired).start()
    try:
        with StageLine(args.file) as show_stage:
            def on_stage(name: str) -> None:
                dog.stage(name)
                show_stage(name)

            started = time.monotonic()
            report = grade_file(args.file, arch=args.arch, seed=args.seed, device_id=args.device, on_stage=on_stage,
                                exercise_name=args.exercise)
    except KeyboardInterrupt:
        print("grade: interrupted (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except GraderError as err:
        print(f"grade: {printable(str(err), None)}", file=sys.stderr)
        if args.format != "text":  # the text report is the stderr line
            refusal = error_report(shown, getattr(err, "stage", None) or Stage.INPUT, str(err),
                                   getattr(err, "details", ""), **named(args.exercise))
            _emit(rendered(args.format, refusal, refused=err))
        return err.exit_code
    finally:
        dog.stop()
        os.close(report_fd)
    add_counters(report, args.file, asked=args.counters, when_slow=not args.no_counters,  # or unasked, when slow
                 device=args.device)
    report.file = printable(shown, None)  # one line, as the model makes it (GradeReport._one_line)
    _emit(rendered(args.format, report, execution_time=time.monotonic() - started))
    return EXIT_BY_VERDICT[report.verdict]


def rendered(fmt: str, report, *, refused: GraderError | None = None, execution_time: float | None = None) -> str:
    """`report` (a GradeReport) as `grade FILE --format fmt` prints it, the one place the choice is made: text
    (grader.output.report.render_text), json (the report's JSON), gradescope (grader.output.gradescope's
    results.json, with `execution_time` in seconds). For a file refused before it was graded (`refused`: the
    GraderError; `report` its error report), gradescope gets "not graded" for the grader's own fault
    (GraderFault) and a refusal otherwise."""
    from grader.output.gradescope import gradescope_not_graded, gradescope_refusal, gradescope_results
    from grader.output.report import render_text

    if fmt == "gradescope":
        if refused is None:
            results = gradescope_results(report, execution_time=execution_time)
        else:
            results = gradescope_not_graded(f"not graded: {refused}") if isinstance(refused, GraderFault) \
                else gradescope_refusal(str(refused))
        return json.dumps(results, indent=2)
    return report.model_dump_json(indent=2) if fmt == "json" else render_text(report)


if __name__ == "__main__":
    sys.exit(main())
