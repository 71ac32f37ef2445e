"""Differential fuzzer of the include policy's lexer (grader.source.includes) against NVRTC itself.

    python benchmarks/fuzz_lexer.py [--minutes 10] [--seed 1] [--out results/fuzz_lexer.json]

Each round builds a seeded random "token soup": a list of pieces such as `#`, `%:`, `include`, `/*`, `*/`,
`//`, quotes, `R"(`, `)"`, a backslash before a newline (with and without blanks between), CR, digits with
`'`, `u8`, `\\u`, `??/`, identifiers, `#if 0` / `#endif`, blanks and newlines, and among them canaries:
`#warning CANARY_<k> ;` (sometimes `#error CANARY_<k> ;`) and `#include "<canary file>"`; raw strings with
odd delimiters (`R"a"b(`), UCNs, digraphs and user-defined literals too. The soup is lexed

- by grader.source.includes.scan (the include policy, over grader.source.lexer's tokens): the refusal, if any, and
  every directive it saw (`Scan.directives`); from the `#if 0` / `#if 1` / `#else` / `#endif` among them,
  which canaries it expects NVRTC to act on;
- by NVRTC, compiling what the grader would compile (the prelude, `#line 1`, the normalized text with
  allowed includes blanked; for a refused soup, the normalized text as written), syntax only: NVRTC
  reports `#warning directive: CANARY_<k>` for each canary it took as a directive, and the canary file's
  own `#warning` (a unique string) if it read that file.

They disagree when NVRTC reports a canary the lexer did not see as a live directive, or the lexer expects
one NVRTC did not report (only before the line where NVRTC stopped: an `#error`, a missing include or the
error limit end its work; and for a refused soup only before the refused line, since NVRTC never sees it),
or when NVRTC opened or read a file for a soup the lexer accepted (that is a leak). Each disagreement is
shrunk (pieces removed while the same kind of disagreement remains) and written with its seed.

The output file (JSON) holds the counts (soups, accepted, refused, canaries compared, NVRTC runs cut short,
disagreements by kind) and each disagreement's minimized text. Exit status: 0 when none was found, 1 when
some were, 2 for bad arguments. tests/test_fuzz_lexer.py runs a bounded version on fixed seeds.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import re
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.source.includes import normalize, scan  # noqa: E402
from grader.source.prelude import PRELUDE  # noqa: E402

NAME = "s.cu"
_CANARY_SEEN = re.compile(r"^s\.cu\((\d+)\): (?:warning #1105-D|catastrophic error): #(?:warning|error) directive: "
                          r"CANARY_(\d+) ;", re.M)
_DIAG_LINE = re.compile(r"^s\.cu\((\d+)\): ", re.M)
_CATASTROPHIC = re.compile(r"^s\.cu\((\d+)\): catastrophic error", re.M)
_LEXER_CANARY = re.compile(r"^[ \t]*CANARY_(\d+) ;")
_WRITTEN_CANARY = re.compile(r"CANARY_(\d+) ;")
_CONDITION = re.compile(r"^[ \t]*([01])[ \t]*$")

# (weight, piece); "{path}" becomes the canary file's path. Canaries are added by make_soup.
PIECES: tuple[tuple[int, str], ...] = (
    (30, "\n"), (8, " "), (2, "\t"), (1, "\f"), (1, "\v"), (3, "\r"), (2, "\r\n"),
    (8, "#"), (3, "%:"), (2, "# "),
    (4, "include"), (2, "error"), (2, "warning"), (3, "define X"), (2, "define"), (2, "pragma"),
    (2, "if 0"), (2, "if 1"), (2, "else"), (3, "endif"), (1, "elif 1"), (1, "ifdef X"), (1, "line"), (1, "undef X"),
    (8, "/*"), (8, "*/"), (6, "//"), (2, "/**/"),
    (8, '"'), (8, "'"), (5, 'R"('), (5, ')"'), (2, 'R"x('), (2, ')x"'), (2, "R"), (2, "u8"), (1, "L"), (1, "u"),
    (1, "U"), (2, '"a"'), (2, "'a'"), (2, '""'), (1, 'u8R"('), (1, 'LR"('), (1, "'\\''"), (1, '"\\\\"'), (1, "_x"),
    (6, "\\\n"), (3, "\\ \n"), (1, "\\\t\n"), (1, "\\\f\n"), (2, "\\"), (1, "\\\r\n"), (1, "\\\r"),
    (4, "1"), (4, "1'"), (3, "'2"), (2, "0x1'f"), (1, "1e"), (1, "e+"), (1, "1."), (1, "1'000'000"), (2, "."),
    (2, "+"),
    (2, "\\u"), (1, "\\u0041"), (1, "\\U"),
    (6, "x"), (2, "int"), (1, "_y"), (1, "a1"),
    (1, "??/"), (1, "??="), (1, "?"),
    (1, "\u00e9"), (1, "\u00a0"), (1, "\uff11"),
    (2, "("), (2, ")"), (3, ";"), (1, ","), (1, "{"), (1, "}"), (1, "="), (2, "*"), (2, "/"), (1, "<"), (1, ">"),
    (1, "__has_include"), (1, "##"),
    # raw strings with odd delimiters (a `"` or `'` in one is legal; `$` is not), UCNs, digraphs and
    # user-defined literals: the tokenizer's (grader.source.lexer) cases
    (2, 'R"a"b('), (2, ')a"b"'), (1, 'R""('), (1, ')""'), (1, "R\"'#("), (1, ")'#\""), (1, 'u8R"a"('), (1, ')a""'),
    (1, 'R"$('), (1, ')$"'), (1, 'R"(x)"_s'), (1, 'LR"-(x)-"'),
    (1, "\\U00000041"), (1, "\\u00"), (1, "a\\u0041"), (1, '"\\u0041"'), (1, "'\\u00e9'"),
    (1, "<%"), (1, "%>"), (1, "<:"), (1, ":>"), (1, "%:%:"), (1, "<::"), (1, ":"),
    (1, '"a"_x'), (1, "'a'_x"), (1, "1_km"), (1, "1.5_x"), (1, '""R'), (1, 'u8"a"'), (1, "U'a'"),
    (2, 'include "{path}"'), (1, '"{path}"'), (1, "<cuda.h>"), (1, "#include <cuda_runtime.h>\n"),
)

# Pieces that get a soup refused wherever they land in code: each soup draws on them less often.
_MOSTLY_REFUSED = frozenset({"\\ \n", "\\\t\n", "\\\f\n", "\\", "\\u", "\\u0041", "\\U", "??/", "??=", "##",
                             "__has_include", "line", 'include "{path}"', "\\\r", "\\U00000041", "\\u00",
                             "a\\u0041", "'a'_x", 'R"$(', "%:%:"})


@dataclass
class Canary:
    """The file NVRTC must never read: its path, and the unique string it reports when it does."""

    path: str
    secret: str

    @classmethod
    def create(cls, folder: str | Path) -> Canary:
        secret = f"LEXER_FUZZ_SECRET_{uuid.uuid4().hex}"
        path = Path(folder) / "canary.h"
        path.write_text(f"#warning {secret}\n")
        return cls(str(path), secret)


@dataclass
class Verdict:
    """What one soup showed: refused or not, the canaries each side compared, and any disagreement
    (kind 'nvrtc_only', 'lexer_only' or 'include', with the canary numbers or the file evidence)."""

    refused: bool
    compared: int
    cut_short: bool
    kind: str | None = None
    detail: str = ""


@dataclass
class Report:
    """Counts of a fuzz run and the disagreements found, each with its seed, soup number and texts."""

    seed: int
    seconds: float = 0.0
    soups: int = 0
    accepted: int = 0
    refused: int = 0
    canaries_compared: int = 0
    nvrtc_cut_short: int = 0
    nvrtc_runs: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    disagreements: list[dict] = field(default_factory=list)


def make_soup(rng: random.Random, canary: Canary, *, max_pieces: int = 60) -> list[str]:
    """A random list of pieces (their concatenation is the soup), with `#warning CANARY_<k> ;` canaries
    numbered from 1 in order and the canary file's path filled in. Each soup draws from its own random
    subset of PIECES, so that soups without any of the always-refused pieces are common; a tail closing a
    comment or raw string is sometimes added."""
    palette = [(w, p) for w, p in PIECES if p == "\n" or rng.random() < (0.2 if p in _MOSTLY_REFUSED else 0.5)]
    weights, texts = [w for w, _ in palette], [p for _, p in palette]
    pieces, k = [], 0
    for _ in range(rng.randint(4, max_pieces)):
        if rng.random() < 0.15:
            k += 1
            lead = rng.choice(("\n#", "\n#", "#", "%:", "\n# ", "\n%:"))
            pieces.append(f"{lead}{'error' if rng.random() < 0.03 else 'warning'} CANARY_{k} ;")
        else:
            pieces.append(rng.choices(texts, weights)[0].replace("{path}", canary.path))
    if rng.random() < 0.3:
        pieces += ["\n", rng.choice(("*/", ')"', ')x"', '*/)"'))]
    return pieces


def nvrtc_log(text: str) -> str:
    """NVRTC's log for `text` compiled as the grader compiles a submission, syntax only ('' when clean)."""
    from cuda.core import Program, ProgramOptions

    options = ProgramOptions(name=NAME, arch="sm_90", std="c++17", no_source_include=True, fdevice_syntax_only=True)
    log = io.StringIO()
    try:
        Program(text, "c++", options).compile("cubin", logs=log)
    except Exception as err:  # NVRTCError: the log is in its message
        return str(err)
    return log.getvalue()


def expected_canaries(directives) -> tuple[dict[int, int], int | None]:
    """From the lexer's directives: {canary number: line} for canaries in live code, and the line after
    which liveness cannot be predicted (a condition other than 0 or 1), or None."""
    live, stack, out = True, [], {}
    for d in directives:
        if d.name in ("if", "ifdef", "ifndef", "elif"):
            cond = _CONDITION.match(d.text) if d.name == "if" else None
            if cond is None:
                return out, d.line
            stack.append((live, cond.group(1) == "1"))
            live = live and cond.group(1) == "1"
        elif d.name == "else" and stack:
            parent, taken = stack[-1]
            live = parent and not taken
            stack[-1] = (parent, True)
        elif d.name == "endif" and stack:
            live = stack.pop()[0]
        elif d.name in ("warning", "error") and live:
            m = _LEXER_CANARY.match(d.text)
            if m:
                out[int(m.group(1))] = d.line
    return out, None


def judge(text: str, canary: Canary, stats: Report | None = None) -> Verdict:
    """Lex `text` both ways and compare (see the module docstring)."""
    result = scan(text)
    refused = result.refusal is not None
    body = normalize(text) if refused else result.normalized  # what NVRTC would compile, line for line
    log = nvrtc_log(f'{PRELUDE}#line 1 "{NAME}"\n{body}')
    if stats is not None:
        stats.nvrtc_runs += 1
    # Lines of the canaries as written: NVRTC's own line numbers move after a line marker (`%:1`).
    written = normalize(text)
    lines = {int(m.group(1)): written.count("\n", 0, m.start()) + 1 for m in _WRITTEN_CANARY.finditer(written)}
    seen = {int(m.group(2)) for m in _CANARY_SEEN.finditer(log)}
    expected, unknown_after = expected_canaries(result.directives)
    limit = float("inf")
    if result.refusal:
        limit = result.listed_before
    if unknown_after is not None:
        limit = min(limit, unknown_after)
    cut_short = "Compilation terminated" in log or "Error limit reached" in log
    if cut_short:
        stop = [int(m.group(1)) for m in _CATASTROPHIC.finditer(log)]
        if not stop:
            stop = [int(m.group(1)) for m in _DIAG_LINE.finditer(log)][-1:] or [0]
        limit = min(limit, stop[0])
    verdict = Verdict(refused, 0, cut_short)
    if not refused and (canary.secret in log or "open source file" in log):
        verdict.kind = "include"
        verdict.detail = "read the canary file" if canary.secret in log else "tried to open a file"
        return verdict
    nvrtc_only = sorted(k for k in seen if lines[k] < limit and k not in expected)
    lexer_only = sorted(k for k, line in expected.items() if line < limit and k not in seen)
    verdict.compared = sum(1 for line in expected.values() if line < limit)
    if nvrtc_only:
        verdict.kind, verdict.detail = "nvrtc_only", f"canaries {nvrtc_only}"
    elif lexer_only:
        verdict.kind, verdict.detail = "lexer_only", f"canaries {lexer_only}"
    return verdict


def minimize(pieces: list[str], kind: str, canary: Canary, budget: int = 400) -> list[str]:
    """Pieces with as many removed as possible while `judge` still finds a disagreement of `kind`
    (at most `budget` NVRTC runs)."""
    runs = 0

    def still(candidate: list[str]) -> bool:
        nonlocal runs
        runs += 1
        return judge("".join(candidate), canary).kind == kind

    chunk = max(1, len(pieces) // 2)
    while chunk >= 1 and runs < budget:
        i, removed = 0, False
        while i < len(pieces) and runs < budget:
            candidate = pieces[:i] + pieces[i + chunk :]
            if candidate and still(candidate):
                pieces, removed = candidate, True
            else:
                i += chunk
        if not removed:
            chunk //= 2
    return pieces


def fuzz(seed: int, canary: Canary, *, soups: int | None = None, seconds: float | None = None,
         max_pieces: int = 60, shrink: bool = True) -> Report:
    """Judge soups from `random.Random(seed)` until `soups` were judged or `seconds` passed (whichever is
    given first); return the counts and every disagreement (minimized when `shrink`)."""
    rng, report, start = random.Random(seed), Report(seed), time.monotonic()
    seen_texts: set[str] = set()
    while (soups is None or report.soups < soups) and (seconds is None or time.monotonic() - start < seconds):
        pieces = make_soup(rng, canary, max_pieces=max_pieces)
        text = "".join(pieces)
        verdict = judge(text, canary, report)
        report.soups += 1
        report.refused += verdict.refused
        report.accepted += not verdict.refused
        report.canaries_compared += verdict.compared
        report.nvrtc_cut_short += verdict.cut_short
        if verdict.kind is None:
            continue
        report.by_kind[verdict.kind] = report.by_kind.get(verdict.kind, 0) + 1
        small = "".join(minimize(pieces, verdict.kind, canary)) if shrink else text
        if small in seen_texts:
            continue
        seen_texts.add(small)
        final = judge(small, canary)
        report.disagreements.append({
            "soup": report.soups, "kind": verdict.kind, "detail": verdict.detail,
            "minimized": small.replace(canary.path, "<canary>"), "minimized_detail": final.detail,
            "refused_by_lexer": final.refused, "text": text.replace(canary.path, "<canary>"),
        })
    report.seconds = round(time.monotonic() - start, 1)
    return report


def main(argv: list[str] | None = None) -> int:
    """Run the fuzzer for --minutes from --seed, write the report to --out (JSON) and print a summary.
    Returns 1 when a disagreement was found, else 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to run (default 10)")
    parser.add_argument("--seed", type=int, default=1, help="first seed; each further minute uses the next one")
    parser.add_argument("--out", default="results/fuzz_lexer.json", help="where to write the JSON report")
    parser.add_argument("--max-pieces", type=int, default=60, help="longest soup, in pieces (default 60)")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.max_pieces < 4:
        parser.error("--minutes must be positive and --max-pieces at least 4")
    total = Report(args.seed)
    deadline = time.monotonic() + args.minutes * 60
    with tempfile.TemporaryDirectory(prefix="fuzz_lexer_") as folder:
        canary = Canary.create(folder)
        seed = args.seed
        while time.monotonic() < deadline:
            part = fuzz(seed, canary, seconds=min(60.0, deadline - time.monotonic()), max_pieces=args.max_pieces)
            for key in ("soups", "accepted", "refused", "canaries_compared", "nvrtc_cut_short", "nvrtc_runs"):
                setattr(total, key, getattr(total, key) + getattr(part, key))
            for kind, count in part.by_kind.items():
                total.by_kind[kind] = total.by_kind.get(kind, 0) + count
            for d in part.disagreements:
                d["seed"] = seed
                if all(d["minimized"] != old["minimized"] for old in total.disagreements):
                    total.disagreements.append(d)
            print(f"seed {seed}: {part.soups} soups, {part.accepted} accepted, {len(part.disagreements)} "
                  "disagreement(s)", file=sys.stderr, flush=True)
            seed += 1
    total.seconds = round(args.minutes * 60, 1)
    summary = {k: v for k, v in asdict(total).items() if k != "disagreements"}
    summary["seeds"] = [args.seed, seed - 1]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**summary, "disagreements": total.disagreements}, indent=1, ensure_ascii=True) + "\n")
    print(json.dumps(summary))
    for d in total.disagreements:
        print(f"seed {d['seed']} soup {d['soup']}: {d['kind']} ({d['minimized_detail']}): {d['minimized']!r}")
    return 1 if total.disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
