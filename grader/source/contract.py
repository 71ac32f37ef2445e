"""The submission contract: how the grader launches a student's kernel, and what the student claims.

A `.cu` file may start with a block of `// grade:` lines (docs/submissions.md; the README shows one); each is
exactly `// grade: KEY = VALUE` on its own line. A line that looks like an attempt at one but would be skipped
(`// Grade:`, `// grade :`, `// grade params = ...`, `/// grade:`, `/* grade: */`, a non-breaking space) is
an input error, so that a declaration is never silently ignored:

    // grade: params = x, bias, out, cols        which argument each parameter is, in order
    // grade: grid = row                          row | flat | stride [BLOCKS]
    // grade: block = 256                         threads per block
    // grade: elems_per_thread = 4                elements each thread handles
    // grade: row = KERNEL | 1 | 2 | 0.512 | 4191.0
    // grade: claim = It reached 0.97 of the copy floor; it cannot exceed 1 because ...

With nothing declared, the launch is the page's: params x, bias, out, cols; grid (ceil(cols / 256), rows)
with blockIdx.y = row; block 256; one element per thread. Parameter names: x, bias, out (float pointers),
rows, cols and n = rows * cols (integers, 32- or 64-bit: the width is read from the compiled kernel).

The grids (row, flat, stride) are grader.core.launch's; `Contract.launch_spec` turns the block into a LaunchSpec.

`row` is the student's table row in the page's part-3 format (version | kernels | floats/elem | ms |
GB/s, optionally | x copy); `claim` is the one sentence the exercise asks for. Both may also be plain comments
in the page's own form (grader.source.claims.find_row, find_claim): `// KERNEL 1 2 0.4881 4124.5` and
`// It reached 0.96 of the copy floor ...`; a `// grade:` line wins over a plain comment. Both are stored for
the byte-count flags; a missing or malformed row is reported, never fatal.
"""

from __future__ import annotations

import re

from grader.core import exercise
from grader.core.errors import GraderFault, InputError
from grader.core.exercise import Exercise, Problem
from grader.core.launch import GridKind, LaunchSpec, Param, integer_param
from grader.core.model import ReportModel
from grader.source.claims import StudentClaim, StudentRow, find_claim, find_row, parse_claim, parse_row
from grader.source.lexer import COMMENT, LITERALS, OPEN_COMMENT, Spliced, normalize, tokens

KEYS = ("params", "grid", "block", "elems_per_thread", "row", "claim")

_DECIMAL_WHOLE = re.compile(r"0|[1-9][0-9]*")
_LINE = re.compile(r"^[ \t]*//[ \t]*grade:(.*)$")
_LOOKALIKE = re.compile(
    r"(?P<opener>(?<![:/])//+!?|/\*+!?|^[^\S\n]*\*(?!/))[^\S\n]*(?P<grade>grade)\b(?P<gap>[^\S\n]*)"
    r"(?:(?P<colon>:)|(?:" + "|".join(KEYS) + r")\b[^\S\n]*=)",
    re.I,
)


class Contract(ReportModel):
    """How to launch the submission, plus the student's declared row and claim (both optional). `pointers` maps
    each pointer role of the exercise to its C type (the rest of `params` are integers); parse_contract fills the
    exercise's defaults (grader.core.exercise.Exercise.default_params, default_grid, ...) where nothing is
    declared."""

    params: tuple[str, ...] = ()
    pointers: dict[str, str] = {}
    grid: GridKind = "row"
    stride_blocks: int | None = None
    block: int = exercise.BLOCK
    elems_per_thread: int = 1
    declared: tuple[str, ...] = ()
    row: StudentRow | None = None
    claim: StudentClaim | None = None

    def signature(self) -> str:
        """The expected parameter list, e.g. '(const float* x, const float* bias, float* out, <int> cols)'."""
        return "(" + ", ".join(f"{self.pointers.get(p, 'int|size_t')} {p}" for p in self.params) + ")"

    def launch_spec(self, widths: tuple[int, ...]) -> LaunchSpec:
        """The submission's launch: the declared params with the integer widths the compiled kernel has
        (`widths`, bytes per parameter in order, from grader.source.signature.check_params), grid, block and
        elements per thread, and the exercise's byte model."""
        params = tuple(Param(role, "ptr") if role in self.pointers else integer_param(role, width)
                       for role, width in zip(self.params, widths, strict=False))
        return LaunchSpec(params, grid=self.grid, block=self.block, elems_per_thread=self.elems_per_thread,
                          stride_blocks=self.stride_blocks)

    def launch_values(self, ptrs: dict[str, object], problem: Problem) -> dict[str, object]:
        """The value of every declared parameter at `problem`: ptrs maps each pointer role to a device buffer or
        address; the integers are problem.integers. Raises GraderFault (the grader's own fault) for an integer over
        exercise.INT32_LIMIT, which no problem of the grader's has (grader.feedback.ptx_paths relies on that)."""
        over = {k: v for k, v in problem.integers.items() if not 0 <= v <= exercise.INT32_LIMIT}
        if over:
            raise GraderFault(f"the grader's problem {problem.label} passes {over}: every integer the grader passes "
                              f"a kernel is 0 .. {exercise.INT32_LIMIT} (grader.core.exercise.INT32_LIMIT)")
        values = {**ptrs, **problem.integers}
        return {role: values[role] for role in self.params}


def parse_contract(text: str, where: str, ex: Exercise) -> Contract:
    """Parse the `// grade:` lines of `text`. Raises InputError naming the line for a malformed one, and for a
    line that looks like an attempt at one but would be silently skipped (`// Grade:`, `// grade :`,
    `// grade params = ...`, `/// grade:`, `/* grade: ... */`, a non-breaking space, a trailing comment)."""
    fields: dict[str, object] = {"params": ex.default_params, "grid": ex.default_grid,
                                 "elems_per_thread": ex.default_elems_per_thread,
                                 "pointers": {p.name: p.c_type for p in ex.pointers}}
    declared: list[str] = []
    inside = _inside_lines(text)
    for line_no, line in enumerate(re.split(r"\r\n|\r|\n", text), 1):
        if line_no == 1:
            line = line.removeprefix("\ufeff")
        if inside.get(line_no) == "literal":
            continue  # program text, not a comment: `R"( // grade: ... )"` declares nothing
        m = _LINE.match(line)
        if m and line_no in inside:
            raise InputError(
                f"{where}:{line_no}: `{_short(line.strip())}` is inside a /* */ block comment, so it is not a "
                f"`// grade:` line of its own; take it out of the block comment, or delete it"
            )
        if not m:
            _refuse_lookalike(line, line_no, where)
            continue
        body = m.group(1).strip()
        key, eq, value = body.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not eq or key not in KEYS:
            raise InputError(
                f"{where}:{line_no}: cannot read `// grade: {body}`; write `// grade: KEY = VALUE` "
                f"with KEY one of {', '.join(KEYS)}"
            )
        if key in declared:
            raise InputError(f"{where}:{line_no}: `{key}` is declared twice; keep one line")
        declared.append(key)
        try:
            _parse_field(key, value, fields, ex)
        except ValueError as err:
            raise InputError(f"{where}:{line_no}: {key}: {err}") from None
    fields["declared"] = tuple(declared)
    if "row" not in fields:
        fields["row"] = find_row(text, ex.kernel_name)
    if "claim" not in fields:
        fields["claim"] = find_claim(text, ex.kernel_name)
    contract = Contract(**fields)  # type: ignore[arg-type]
    why = ex.check_params(contract.params, contract.grid)
    if why:
        raise InputError(f"{where}: {why}")
    return contract


def _inside_lines(text: str) -> dict[int, str]:
    """The 1-based lines of `text` that begin inside a token that started on an earlier line, read with
    grader.source.lexer's tokens (the one reader of C source): "literal" inside a string or raw string literal,
    "comment" inside a /* */ block comment. One linear pass."""
    src = Spliced(normalize(text))
    s, inside = src.s, {}
    for tok in tokens(s):
        block = tok.kind == OPEN_COMMENT or tok.kind == COMMENT and s.startswith("/*", tok.start)
        if (block or tok.kind in LITERALS) and tok.end > tok.start:
            for line in range(src.line(tok.start) + 1, src.line(tok.end - 1) + 1):
                inside[line] = "comment" if block else "literal"
    return inside


def _refuse_lookalike(line: str, line_no: int, where: str) -> None:
    """Raise InputError when `line` is not a `// grade:` line but looks like an attempt at one: `grade` (any
    case) right after a comment opener, then a colon or a KEY followed by `=`. Prose such as
    `// grade this later` or `// upgrade: ...` is left alone."""
    m = _LOOKALIKE.search(line)
    if not m:
        return
    opener = m.group("opener").strip()
    why = []
    if m.group("grade") != "grade":
        why.append(f"`{m.group('grade')}` must be lowercase `grade`")
    if opener.startswith("/*") or opener == "*":
        why.append("it must be a `//` line comment, not a /* */ block comment")
    elif opener != "//":
        why.append(f"it must start with exactly two slashes, not `{opener}`")
    if line[: m.start("opener")].strip():
        why.append("it must be on its own line, not after code")
    if any(ch.isspace() and ch not in " \t" for ch in line[: m.end()]):
        why.append("it holds a space other than a plain space or tab (e.g. a non-breaking space)")
    if not m.group("colon"):
        why.append("`grade` must be followed by a colon")
    elif m.group("gap"):
        why.append("the colon must follow `grade` directly (`grade:`, not `grade :`)")
    shown = ascii(line.strip()) if not line.strip().isascii() else f"`{line.strip()}`"
    raise InputError(
        f"{where}:{line_no}: {shown} looks like a `// grade:` line but the grader would skip it"
        f" ({'; '.join(why) or 'see the README'}); write it as `// grade: KEY = VALUE` with KEY one of "
        f"{', '.join(KEYS)}, or reword the comment"
    )


def _parse_field(key: str, value: str, fields: dict[str, object], ex: Exercise) -> None:
    if key == "params":
        names = tuple(v.strip() for v in value.split(",") if v.strip())
        bad = [n for n in names if n not in ex.roles]
        if bad:
            raise ValueError(f"unknown name {bad[0]!r}; use {', '.join(ex.roles)}")
        if len(set(names)) != len(names):
            raise ValueError("a name appears twice")
        fields["params"] = names
    elif key == "grid":
        parts = value.split()
        if not parts or parts[0] not in ("row", "flat", "stride") or len(parts) > 2 or (
            len(parts) == 2 and parts[0] != "stride"
        ):
            raise ValueError(f"{value!r}: use `row`, `flat` or `stride [BLOCKS]`")
        fields["grid"] = parts[0]
        if len(parts) == 2:
            fields["stride_blocks"] = _int_in(parts[1], 1, 2**31 - 1)
    elif key == "block":
        block = _int_in(value, 32, 1024)
        if block % 32:
            raise ValueError(f"{block} is not a multiple of 32 (a warp)")
        fields["block"] = block
    elif key == "elems_per_thread":
        fields["elems_per_thread"] = _int_in(value, 1, 64)
    elif key == "row":
        fields["row"] = parse_row(value)
    elif key == "claim":
        fields["claim"] = parse_claim(value)


def _int_in(value: str, lo: int, hi: int) -> int:
    """`value` as a whole number in lo..hi. Only what C reads as the same decimal number is accepted: ASCII
    digits 0-9, no leading zero (C reads 0256 as octal), no sign, `_`, hex or other digit characters
    (Python's int() would take `2_56` and full-width digits). Raises ValueError saying so."""
    if not _DECIMAL_WHOLE.fullmatch(value):
        raise ValueError(f"{_short(value)!r} is not a decimal whole number; write it with the digits 0-9 "
                         "(no sign, `_`, hex `0x`, leading zero or other digit characters)")
    n = int(value) if len(value) <= 18 else hi + 1  # int() refuses more than 4300 digits
    if not lo <= n <= hi:
        raise ValueError(f"{_short(value)} is outside {lo}..{hi}")
    return n


def _short(text: str, limit: int = 40) -> str:
    """`text` cut to `limit` characters with `...` (a field quoted in a message)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
