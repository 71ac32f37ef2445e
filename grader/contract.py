"""The submission contract: how the grader launches a student's kernel, and what the student claims.

A `.cu` file may start with a block of `// grade:` lines (README, "The `// grade:` block"); each is exactly
`// grade: KEY = VALUE` on its own line. A line that looks like an attempt at one but would be skipped
(`// Grade:`, `// grade :`, `// grade params = ...`, `/// grade:`, `/* grade: */`, a non-breaking space) is
an input error, so that a declaration is never silently ignored:

    // grade: params = x, bias, out, cols        which argument each parameter is, in order
    // grade: grid = row                          row | flat | stride [BLOCKS]
    // grade: block = 256                         threads per block
    // grade: elems_per_thread = 4                elements each thread handles
    // grade: row = biasGeluFused | 1 | 2 | 0.512 | 4191.0
    // grade: claim = It reached 0.97 of the copy floor; it cannot exceed 1 because ...

With nothing declared, the launch is the page's: params x, bias, out, cols; grid (ceil(cols / 256), rows)
with blockIdx.y = row; block 256; one element per thread. Parameter names: x, bias, out (float pointers),
rows, cols and n = rows * cols (integers, 32- or 64-bit: the width is read from the compiled kernel).

Grids, for a rows x cols problem with B threads per block and E elements per thread:
  row      (ceil(cols / (B * E)), rows): blockIdx.y is the row (rows <= 65535)
  flat     (ceil(rows * cols / (B * E)), 1): one index over all elements
  stride   (BLOCKS, 1): a fixed grid-stride grid; BLOCKS defaults to the number that fills the GPU once
           (multiprocessors x max threads per multiprocessor / B)

`row` is the student's table row in the page's part-3 format (version | kernels | floats/elem | ms |
GB/s, optionally | x copy); `claim` is the one sentence the exercise asks for. Both are stored for the
byte-count flags; a missing or malformed row is reported, never fatal.
"""

from __future__ import annotations

import math
import re
from typing import Literal

from pydantic import BaseModel

from grader import exercise
from grader.errors import InputError

POINTER_ROLES = ("x", "bias", "out")
INTEGER_ROLES = ("rows", "cols", "n")
ROLES = POINTER_ROLES + INTEGER_ROLES
KEYS = ("params", "grid", "block", "elems_per_thread", "row", "claim")

_LINE = re.compile(r"^[ \t]*//[ \t]*grade:(.*)$")
_LOOKALIKE = re.compile(
    r"(?P<opener>(?<![:/])//+!?|/\*+!?|^[^\S\n]*\*(?!/))[^\S\n]*(?P<grade>grade)\b(?P<gap>[^\S\n]*)"
    r"(?:(?P<colon>:)|(?:" + "|".join(KEYS) + r")\b[^\S\n]*=)",
    re.I,
)
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


class StudentRow(BaseModel):
    """The student's table row as written, and its fields where they parse (None where not)."""

    raw: str
    version: str | None = None
    kernels: int | None = None
    floats_per_elem: float | None = None
    ms: float | None = None
    gbs: float | None = None
    x_copy: float | None = None
    problem: str | None = None


class StudentClaim(BaseModel):
    """The student's sentence, and the fraction of the copy floor it states (None if it states none)."""

    raw: str
    fraction: float | None = None


class Contract(BaseModel):
    """How to launch the submission, plus the student's declared row and claim (both optional)."""

    params: tuple[str, ...] = exercise.DEFAULT_PARAMS
    grid: Literal["row", "flat", "stride"] = "row"
    stride_blocks: int | None = None
    block: int = exercise.DEFAULT_BLOCK
    elems_per_thread: int = exercise.DEFAULT_ELEMS_PER_THREAD
    declared: tuple[str, ...] = ()
    row: StudentRow | None = None
    claim: StudentClaim | None = None

    def signature(self) -> str:
        """The expected parameter list, e.g. '(const float* x, const float* bias, float* out, <int> cols)'."""
        kinds = {"x": "const float*", "bias": "const float*", "out": "float*"}
        return "(" + ", ".join(f"{kinds.get(p, 'int|size_t')} {p}" for p in self.params) + ")"


class LaunchPlan(BaseModel):
    """Grid and block of one launch of the submission for a rows x cols problem."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]


def parse_contract(text: str, where: str) -> Contract:
    """Parse the `// grade:` lines of `text`. Raises InputError naming the line for a malformed one, and for a
    line that looks like an attempt at one but would be silently skipped (`// Grade:`, `// grade :`,
    `// grade params = ...`, `/// grade:`, `/* grade: ... */`, a non-breaking space, a trailing comment)."""
    fields: dict[str, object] = {}
    declared: list[str] = []
    for line_no, line in enumerate(re.split(r"\r\n|\r|\n", text), 1):
        if line_no == 1:
            line = line.removeprefix("\ufeff")
        m = _LINE.match(line)
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
            _parse_field(key, value, fields)
        except ValueError as err:
            raise InputError(f"{where}:{line_no}: {key}: {err}") from None
    fields["declared"] = tuple(declared)
    contract = Contract(**fields)  # type: ignore[arg-type]
    _check_consistent(contract, where)
    return contract


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


def _parse_field(key: str, value: str, fields: dict[str, object]) -> None:
    if key == "params":
        names = tuple(v.strip() for v in value.split(",") if v.strip())
        bad = [n for n in names if n not in ROLES]
        if bad:
            raise ValueError(f"unknown name {bad[0]!r}; use x, bias, out, rows, cols, n")
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
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a whole number") from None
    if not lo <= n <= hi:
        raise ValueError(f"{n} is outside {lo}..{hi}")
    return n


def _check_consistent(c: Contract, where: str) -> None:
    missing = [p for p in POINTER_ROLES if p not in c.params]
    if missing:
        raise InputError(f"{where}: params must include x, bias and out; missing {', '.join(missing)}")
    if "cols" not in c.params:
        raise InputError(f"{where}: params must include cols: the kernel needs it to find bias[col]")
    if c.grid != "row" and not {"rows", "n"} & set(c.params):
        raise InputError(f"{where}: a {c.grid} grid needs rows or n in params to know where the data ends")


def parse_row(value: str) -> StudentRow:
    """Parse 'version | kernels | floats/elem | ms | GB/s [| x copy]' (or the same separated by spaces,
    version first). Never raises: a field that does not parse is left None and `problem` says why."""
    if "|" in value:
        parts = [p.strip() for p in value.split("|")]
    else:
        tokens = value.split()
        numeric = 0
        while numeric < len(tokens) and re.fullmatch(_NUMBER, tokens[-1 - numeric]):
            numeric += 1
        numeric = min(numeric, 5)
        parts = [" ".join(tokens[: len(tokens) - numeric])] + tokens[len(tokens) - numeric :]
    row = StudentRow(raw=value)
    if len(parts) not in (5, 6):
        row.problem = (
            f"expected 5 fields (version | kernels | floats/elem | ms | GB/s), found {len(parts)}"
        )
        return row
    row.version = parts[0] or None
    problems = []
    for name, text, conv in zip(
        ("kernels", "floats_per_elem", "ms", "gbs", "x_copy"),
        parts[1:],
        (int, float, float, float, float),
    ):
        try:
            number = conv(text)
            if not math.isfinite(number) or number < 0:
                raise ValueError
            setattr(row, name, number)
        except ValueError:
            problems.append(f"{name} {text!r} is not a number")
    if problems:
        row.problem = "; ".join(problems)
    return row


def parse_claim(value: str) -> StudentClaim:
    """Parse the student's sentence; the stated fraction is the first 'NN%' (divided by 100), else the first
    decimal number between 0 and 2 written with a point (e.g. 0.93)."""
    claim = StudentClaim(raw=value)
    pct = re.search(r"(\d+(?:\.\d+)?)\s*(?:%|percent)", value)
    if pct:
        claim.fraction = float(pct.group(1)) / 100
        return claim
    for m in re.finditer(r"(?<![\d.])(\d*\.\d+)(?![\d.])", value):
        f = float(m.group(1))
        if 0 <= f <= 2:
            claim.fraction = f
            break
    return claim


def plan_launch(c: Contract, rows: int, cols: int, sm_count: int, threads_per_sm: int) -> LaunchPlan:
    """Grid and block for a rows x cols problem under contract `c` (see the module docstring).

    Raises InputError when a row grid would need more than 65535 rows (the gridDim.y limit).
    """
    per_block = c.block * c.elems_per_thread
    if c.grid == "row":
        if rows > exercise.MAX_GRID_Y:
            raise InputError(f"a row grid launches one block row per row; {rows} > {exercise.MAX_GRID_Y}")
        grid = (math.ceil(cols / per_block), rows, 1)
    elif c.grid == "flat":
        grid = (math.ceil(rows * cols / per_block), 1, 1)
    else:
        blocks = c.stride_blocks or max(1, sm_count * threads_per_sm // c.block)
        grid = (blocks, 1, 1)
    return LaunchPlan(grid=grid, block=(c.block, 1, 1))


INTEGER_TYPE_WORDS = frozenset((
    "int", "unsigned", "signed", "long", "short", "char", "bool", "size_t", "ssize_t", "ptrdiff_t", "intptr_t",
    "uintptr_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
    "__int64", "__int128",
))
FLOAT_TYPE_WORDS = frozenset(("float", "double", "half", "__half", "__nv_bfloat16", "nv_bfloat16"))
_NOT_FLOAT32_POINTEES = FLOAT_TYPE_WORDS - {"float"}
_QUALIFIERS = frozenset((
    "const", "volatile", "__restrict__", "__restrict", "restrict", "register", "std", "__grid_constant__",
    "struct", "class", "typename", "enum",
))
_IDENT = re.compile(r"[A-Za-z_]\w*")


def source_signature(text: str, kernel: str) -> list[str] | None:
    """The parameter declarations of `kernel` as written in `text` (e.g. ['const float* x', 'size_t cols']),
    comments removed and spaces collapsed, or None when they cannot be read from the text.

    Comments (string-literal aware) and `#if 0` / `#if 1 ... #else` branches are dropped first; then the
    last `__global__ void kernel(...)` definition (one followed by a body) is taken, or the last declaration
    when there is no definition. None when the list uses a macro defined in the file (a macro-built
    signature), when several definitions disagree (e.g. under #ifdef), or when no signature is found: the
    compiled kernel is then the only evidence. Used for messages and to tell pointers from integers; the
    compiled kernel is the authority on the count and widths (see check_params)."""
    clean, macros = _preprocess(_strip_comments(_splice(text)))
    definitions: list[list[str] | None] = []
    declarations: list[list[str] | None] = []
    for m in re.finditer(rf"(?<![\w:]){re.escape(kernel)}\s*\(", clean):
        before = max(clean.rfind(ch, 0, m.start()) for ch in ";{}")
        prefix = clean[before + 1 : m.start()]
        if not (re.search(r"\b__global__\b", prefix) and re.search(r"\bvoid\b", prefix)):
            continue
        close = _matching_paren(clean, m.end() - 1)
        if close is None:
            continue
        inside = clean[m.end() : close]
        params = None if set(_IDENT.findall(inside)) & macros else _split_params(inside)
        follow = re.search(r"[{;]", clean[close + 1 :])
        (definitions if follow and follow.group() == "{" else declarations).append(params)
    found = definitions or declarations
    if not found or any(p is None for p in found):
        return None
    if len({tuple((_param_kind(q), *sorted(set(_type_words(q)) & FLOAT_TYPE_WORDS)) for q in p)
            for p in found if p is not None}) > 1:
        return None
    return found[-1]


def _splice(text: str) -> str:
    """Normalize line ends to \n and join backslash-continued lines (translation phases 1-2)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return re.sub(r"\\[ \t]*\n", "", text)


def _strip_comments(text: str) -> str:
    """Replace each comment by one space (keeping a block comment's newlines), leaving string and character
    literals (raw strings included) intact; a digit separator (1'000) is not a character literal."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' and re.search(r"(?<![\w])(?:u8|u|U|L)?R$", text[max(0, i - 5) : i]):
            delim = re.match(r'[^()\\\s"]{0,16}\(', text[i + 1 :])
            end = text.find(")" + delim.group()[:-1] + '"', i) if delim else -1
            stop = n if end < 0 else end + len(delim.group()) + 1
            out.append(text[i:stop])
            i = stop
        elif c == '"' or (c == "'" and not re.search(r"(?<![\w.])\d[\w']*$", text[max(0, i - 40) : i])):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            out.append(" ")
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            stop = n if j < 0 else j + 2
            out.append(" " + "\n" * text.count("\n", i, stop))
            i = stop
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _preprocess(text: str) -> tuple[str, set[str]]:
    """Blank every preprocessor line and the branches a literal `#if 0` / `#if 1` rules out (keeping both
    branches of any other conditional), and collect the names of the macros #defined in kept code."""
    # Each open conditional: "zero" (#if 0, skipped), "else" (a branch after a taken #if 1, skipped),
    # "live" (kept) -- a line is kept when no open conditional skips it.
    stack: list[str] = []
    macros: set[str] = set()
    out = []
    for line in text.split("\n"):
        d = re.match(r"\s*#\s*(\w*)\s*(.*)", line)
        if not d:
            out.append("" if "zero" in stack or "else" in stack else line)
            continue
        out.append("")
        word, rest = d.group(1), d.group(2).strip()
        if word in ("if", "ifdef", "ifndef"):
            value = rest if word == "if" else ""
            stack.append("zero" if value in ("0", "false") else "one" if value in ("1", "true") else "live")
        elif word in ("else", "elif", "elifdef", "elifndef") and stack:
            stack[-1] = {"zero": "live", "one": "else"}.get(stack[-1], stack[-1])
        elif word == "endif" and stack:
            stack.pop()
        elif word == "define" and not ("zero" in stack or "else" in stack):
            name = _IDENT.match(rest)
            if name:
                macros.add(name.group())
    return "\n".join(out), macros


def _matching_paren(text: str, open_at: int) -> int | None:
    depth = 0
    for j in range(open_at, len(text)):
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    return None


def _split_params(inside: str) -> list[str] | None:
    """Split a parameter list at its top-level commas (not inside (), [], {} or <>); [] for `()` or
    `(void)`; None for an empty entry (a stray comma)."""
    parts, depth, angle, cur = [], 0, 0, []
    for ch in inside:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "<" and depth == 0:
            angle += 1
        elif ch == ">" and depth == 0 and angle:
            angle -= 1
        elif ch == "," and depth == 0 and angle == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    params = [" ".join(p.split()) for p in parts]
    if params in ([""], ["void"]):
        return []
    return None if "" in params else params


def _type_words(decl: str) -> list[str]:
    """The type words of one declaration: its identifiers less qualifiers and less its name (the last
    identifier, when there are two or more)."""
    words = [w for w in _IDENT.findall(decl) if w not in _QUALIFIERS]
    return words[:-1] if len(words) >= 2 else words


def _param_kind(param: str) -> str:
    """Classify one written parameter by its type: 'reference' (&), 'pointer' (* or []), 'integer' (only
    integer type words), 'floating' (a float/double/half type word) or 'unknown' (a typedef, a macro, a
    struct: the text says nothing and only the compiled kernel is judged)."""
    decl_text = param.split("=", 1)[0]  # drop a default argument
    if "&" in decl_text:
        return "reference"
    if "*" in decl_text or "[" in decl_text:
        return "pointer"
    if "(" in decl_text or "<" in decl_text:  # a function type, a template: leave it to the compiled kernel
        return "unknown"
    words = _type_words(decl_text)
    if words and all(w in INTEGER_TYPE_WORDS for w in words):
        return "integer"
    if any(w in FLOAT_TYPE_WORDS for w in words):
        return "floating"
    return "unknown"


def check_params(c: Contract, compiled: list[tuple[str, int]], written: list[str] | None,
                 kernel: str) -> tuple[int, ...]:
    """Check the compiled kernel's parameters against the contract; return each parameter's width in bytes.

    compiled: (PTX type, size in bytes) per parameter, e.g. [('u64', 8), ('u32', 4)]; written: the list from
    `source_signature`, ignored when its length differs from the compiled list (a macro expansion). Pointers
    (x, bias, out) must be 8-byte integers in PTX; rows, cols and n 4- or 8-byte integers. The written text
    refuses a parameter only on clear evidence: a pointer role written as an integer, a floating-point
    value, a reference or a double/half pointer; an integer role written as a pointer, a reference or a
    float/double. A type the text cannot classify (a typedef, a macro) is judged by the compiled kernel
    alone. Raises SubmissionError(stage "contract") printing both lists on any mismatch.
    """
    from grader.errors import SubmissionError

    if written is not None and len(written) != len(compiled):
        written = None
    problems = []
    if len(compiled) != len(c.params):
        problems.append(f"the kernel has {len(compiled)} parameters, the launch passes {len(c.params)}")
    for i, (role, (ptype, size)) in enumerate(zip(c.params, compiled)):
        is_int = ptype[0] in "usb"
        text = written[i] if written else None
        kind = _param_kind(text) if text is not None else "unknown"
        shown = text or f".{ptype}"
        if role in POINTER_ROLES:
            why = ""
            if not (is_int and size == 8):
                why = f"the compiled kernel has .{ptype} ({size} bytes) there"
            elif kind == "reference":
                why = "it is a reference; pass the pointer by value"
            elif kind in ("integer", "floating"):
                why = f"it is written as {'an integer' if kind == 'integer' else 'a floating-point value'}"
            elif kind == "pointer" and set(_type_words(text)) & _NOT_FLOAT32_POINTEES:
                why = "it points to " + "/".join(sorted(set(_type_words(text)) & _NOT_FLOAT32_POINTEES))
            if why:
                problems.append(f"parameter {i + 1} ({shown}) should be a float pointer ({role}): {why}")
        else:
            why = ""
            if not (is_int and size in (4, 8)):
                why = f"the compiled kernel has .{ptype} ({size} bytes) there"
            elif kind == "reference":
                why = "it is a reference; pass the integer by value"
            elif kind == "pointer":
                why = "it is written as a pointer"
            elif kind == "floating":
                why = "it is written as a floating-point type"
            if why:
                problems.append(f"parameter {i + 1} ({shown}) should be a 32- or 64-bit integer ({role}): {why}")
    if problems:
        have = f"{kernel}({', '.join(written)})" if written else f"{kernel}(" + ", ".join(
            f".{t} ({s} bytes)" for t, s in compiled) + ")"
        declared = "declared in the // grade: block" if "params" in c.declared else "the page's default"
        raise SubmissionError(
            "contract",
            f"{kernel}: parameter list does not match the launch: {problems[0]}",
            details=f"  kernel:   {have}\n  expected: {kernel}{c.signature()}   ({declared})\n"
            "  Fix the kernel, or declare its parameters with `// grade: params = ...` (README).",
        )
    return tuple(size for _, size in compiled)


def kernel_args(c: Contract, widths: tuple[int, ...], ptrs: dict[str, int], rows: int, cols: int) -> tuple:
    """The launch arguments, in the kernel's order: pointers as 64-bit values, integers as numpy scalars of
    the kernel's own width (np.int32 or np.uint64). ptrs maps 'x', 'bias', 'out' to device addresses.
    Raises InputError when a value does not fit a 32-bit parameter."""
    import numpy as np

    values = {"rows": rows, "cols": cols, "n": rows * cols}
    args = []
    for role, width in zip(c.params, widths):
        if role in POINTER_ROLES:
            args.append(np.uint64(ptrs[role]))
        elif width == 4:
            if values[role] >= 2**31:
                raise InputError(f"{role} = {values[role]} does not fit the kernel's 32-bit parameter")
            args.append(np.int32(values[role]))
        else:
            args.append(np.uint64(values[role]))
    return tuple(args)
