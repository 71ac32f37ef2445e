"""The kernel's parameter list, as written in the source and as compiled, checked against the contract.

The compiled kernel (the cubin's parameter list: grader.cubin; on the GPU the driver's sizes too) is the
authority on the count and widths; the source text only tells pointers from integers and names parameters in
messages. The text is read after
stripping comments and `#if 0` blocks, from the last definition of the kernel; where it cannot be read
(a macro-built list, several disagreeing definitions) only the compiled list is judged.
"""

from __future__ import annotations

import bisect
import re

from grader.contract import POINTER_ROLES, Contract
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
_RAW_DELIMITER = re.compile(r'[^()\\\s"]{0,16}\(')


def source_signature(text: str, kernel: str) -> list[str] | None:
    """The parameter declarations of `kernel` as written in `text` (e.g. ['const float* x', 'size_t cols']),
    comments removed and spaces collapsed, or None when they cannot be read from the text.

    Comments (string-literal aware) and `#if 0` / `#if 1 ... #else` branches are dropped first; then the
    last `__global__ void kernel(...)` definition (one followed by a body) is taken, or the last declaration
    when there is no definition. None when the list uses a macro defined in the file (a macro-built
    signature), when several definitions disagree (e.g. under #ifdef), or when no signature is found: the
    compiled kernel is then the only evidence. Used for messages and to tell pointers from integers; the
    compiled kernel is the authority on the count and widths (see check_params).

    Linear in the length of `text`, whatever it holds (thousands of copies of the header, unclosed or
    nested, deep conditionals): every look-up is a bisection in positions found in one pass, and a header
    inside another one's parentheses is not read (no parameter list holds a kernel definition)."""
    clean, macros = _preprocess(_strip_comments(_splice(text)))
    closing = _matching_parens(clean)
    stops = _positions(r"[;{}]", clean)  # where a declaration can start after
    global_words, void_words = _positions(r"\b__global__\b", clean), _positions(r"\bvoid\b", clean)
    bodies = _positions(r"[{;]", clean)
    definitions: list[list[str] | None] = []
    declarations: list[list[str] | None] = []
    read_to = -1  # end of the last parameter list read
    for m in re.finditer(rf"(?<![\w:]){re.escape(kernel)}\s*\(", clean):
        if m.start() < read_to:
            continue
        at = bisect.bisect_left(stops, m.start())
        before = stops[at - 1] if at else -1
        if not (_any_between(global_words, before, m.start()) and _any_between(void_words, before, m.start())):
            continue
        close = closing.get(m.end() - 1)
        if close is None:
            continue
        read_to = close
        inside = clean[m.end() : close]
        params = None if set(_IDENT.findall(inside)) & macros else _split_params(inside)
        follow = bisect.bisect_right(bodies, close)
        (definitions if follow < len(bodies) and clean[bodies[follow]] == "{" else declarations).append(params)
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
            delim = _RAW_DELIMITER.match(text, i + 1)  # at a position: no copy of the rest of the text
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
    # `skipping` counts the open conditionals that skip (zero or else), so a line costs O(1) at any depth.
    stack: list[str] = []
    skipping = 0
    macros: set[str] = set()
    out = []
    for line in text.split("\n"):
        d = re.match(r"\s*#\s*(\w*)\s*(.*)", line)
        if not d:
            out.append("" if skipping else line)
            continue
        out.append("")
        word, rest = d.group(1), d.group(2).strip()
        if word in ("if", "ifdef", "ifndef"):
            value = rest if word == "if" else ""
            stack.append("zero" if value in ("0", "false") else "one" if value in ("1", "true") else "live")
            skipping += stack[-1] == "zero"
        elif word in ("else", "elif", "elifdef", "elifndef") and stack:
            new = {"zero": "live", "one": "else"}.get(stack[-1], stack[-1])
            skipping += (new in ("zero", "else")) - (stack[-1] in ("zero", "else"))
            stack[-1] = new
        elif word == "endif" and stack:
            skipping -= stack.pop() in ("zero", "else")
        elif word == "define" and not skipping:
            name = _IDENT.match(rest)
            if name:
                macros.add(name.group())
    return "\n".join(out), macros


def _matching_parens(text: str) -> dict[int, int]:
    """{position of `(`: position of its `)`} for every closed pair in `text`, found in one pass."""
    pairs, opened = {}, []
    for m in re.finditer(r"[()]", text):
        if m.group() == "(":
            opened.append(m.start())
        elif opened:
            pairs[opened.pop()] = m.start()
    return pairs


def _positions(pattern: str, text: str) -> list[int]:
    """Start positions of every match of `pattern` in `text`, in order."""
    return [m.start() for m in re.finditer(pattern, text)]


def _any_between(positions: list[int], low: int, high: int) -> bool:
    """True when the sorted `positions` hold one strictly between `low` and `high`."""
    at = bisect.bisect_right(positions, low)
    return at < len(positions) and positions[at] < high


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

    compiled: (PTX type, size in bytes) per parameter, e.g. [('u64', 8), ('u32', 4)], as grader.compile reads
    them (count and sizes from the cubin's metadata, types from PTX that agrees with it); written: the list from
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

