"""A kernel's PTX as functions, and which of its instructions a launch of the grader can reach.

Why (issue 32): the RoPE page's own advice is "32-bit division when pairs < 2^31", and a kernel that takes it
keeps the page's size_t body for larger tensors:

    if (pairs < (size_t(1) << 31)) { ... 32-bit pos and j ... } else { ... p / (half * heads) in size_t ... }

Its machine code still calls CUDA's 64-bit division routine, on a path no launch of the grader takes: every
integer the grader passes a kernel is at most grader.core.exercise.INT32_LIMIT (every benchmark buffer holds
fewer than 2^31 floats, every verification shape is small). A hint about that division would tell the student
to do what they did.

The reading: the entry's statements in order, split at labels and branches (`bra`, `@%p bra`, `@!%p bra`,
`ret`, `exit`), walked from the top. A branch goes one way only where its predicate is decided for every
launch: a `setp` of an integer comparison (`lt le gt ge eq ne lo ls hi hs`, signed or unsigned, 16 to 64 bits)
between PTX integer literals and registers whose one definition in the body (counting every destination: a
vector load's `{%r1, %r2}`, a second predicate's `%p|%q`; a guarded one makes it unknown) is an `ld.param` of an
integer parameter (0 .. INT32_LIMIT), a `cvt` or `mov` of such a register (zero or sign extension keeps
0 .. 2^31 - 1), or an `and` or `or` of them (and `and` with a literal: LLVM's `n < 2^31 && m < 2^31` is
`(n | m) & -2^31 == 0`). Every other branch goes both ways, and an indirect one (`brx.idx`) reaches every
statement, so anything unsure is reachable: the reading can only remove paths that no launch takes. A `.func`
is reached whole (its parameters are not the kernel's) when a reached statement calls it, or when anything
takes its address (a function pointer, a virtual call, a module-scope table), wherever that is.

tests/test_ptx_paths.py holds kernels written to break it (a loop whose vector load rewrites the parameter's
register, an octal literal, a branch back through `brx.idx`, a table of function pointers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
HEADER = re.compile(r"^[ \t]*(?:\.(?:visible|weak|extern)\s+)*\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)", re.M)
CALL = re.compile(r"\bcall(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?([\w$]+)")
INT_DIV = re.compile(r"\b(?:div|rem)(?:\.full)?\.[us](?:16|32|64)\b")
"""An integer division or remainder: in PTX from NVRTC its divisor is known only at run time (a division by a
constant becomes mul.hi and shifts)."""

_SCOPE = re.compile(r"^\s*[{}]\s*$", re.M)
"""A line that opens or closes a scope (the body's braces, a call sequence's, inline assembly's); braces inside a
statement ({%f1, %f2} vector operands) are kept."""
_LINE_DIRECTIVE = re.compile(r"^\s*\.(?:loc|file)\b[^\n]*$", re.M)
"""Line information (with lineinfo, `.loc 1 26 5` before a statement): a directive with no ';'."""
_LABEL = re.compile(r"^\s*([\w$]+):\s*(.*)$", re.S)
_GUARD = re.compile(r"^@(!?)(%[\w$]+)\s+(.*)$", re.S)
_SETP = re.compile(r"^setp\.(lt|le|gt|ge|eq|ne|lo|ls|hi|hs)\.([su])(16|32|64)\s+(%[\w$]+)\s*,\s*([^,]+),\s*([^,]+)$")
_LD_PARAM = re.compile(r"^ld\.param\.[bsu](?:32|64)\s+(%[\w$]+)\s*,\s*\[\s*([\w$]+)_param_(\d+)\s*\]$")
_COPY = re.compile(r"^(?:cvt\.[su](?:32|64)\.[su](?:32|64)|mov\.[bsu](?:32|64))\s+(%[\w$]+)\s*,\s*(%[\w$]+)$")
_DESTS = re.compile(r"^[\w.:]+\s+(\{[^}]*\}|%[\w$]+(?:\s*\|\s*%[\w$]+)?)")
"""An instruction's first operand, where it writes: one register, a vector ({%r1, %r2}) or two predicates (%p|%q)."""
_REG = re.compile(r"%[\w$]+")
_BITS = re.compile(r"^(and|or)\.b(?:32|64)\s+(%[\w$]+)\s*,\s*([^,]+),\s*([^,]+)$")
_NAME = re.compile(r"(?<![\w$%.])[\w$]+")
_INITIALIZER = re.compile(r"=\s*(\{[^;]*\}|[^;{]+);")
_LITERALS = ((re.compile(r"0[xX][0-9a-fA-F]+"), 16), (re.compile(r"0[bB][01]+"), 2), (re.compile(r"0[0-7]+"), 8),
             (re.compile(r"0|[1-9]\d*"), 10))
"""PTX's integer literals (PTX ISA, "Integer constants"): hexadecimal, binary, octal, decimal; a U suffix."""
_UNSIGNED = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}


def kernel_functions(ptx: str, mangled: str) -> dict[str, tuple[str, str]] | None:
    """{name: (kind "entry" or "func", body)} of the `.entry` named `mangled` (first) and of every `.func` it
    may run: those it or they name (a call, or an address taken for a function pointer) and those a module-scope
    initializer names (a table of function pointers); bodies brace-balanced, comments removed. None when `ptx`
    has no such entry."""
    found = _functions(ptx, mangled)
    return None if found is None else found[0]


def _functions(ptx: str, mangled: str) -> tuple[dict[str, tuple[str, str]], list[str]] | None:
    """(kernel_functions' answer, the functions a launch starts in: the entry, then those a module-scope
    initializer names), or None when `ptx` has no entry `mangled`."""
    text = COMMENT.sub("", ptx)
    bodies: dict[str, tuple[str, str]] = {}
    outside, at = [], 0  # the module-scope text between the bodies
    for m in HEADER.finditer(text):
        body = _body_after(text, m.end())
        if body is not None:
            bodies[m.group(2)] = (m.group(1), body)
            start = text.index(body, m.end())
            outside.append(text[at:start])
            at = start + len(body)
    outside.append(text[at:])
    if bodies.get(mangled, ("", ""))[0] != "entry":
        return None
    funcs = {name for name, (kind, _) in bodies.items() if kind == "func"}
    order = {name: i for i, name in enumerate(bodies)}
    tables = names_in(" ".join(_INITIALIZER.findall("".join(outside))))
    roots = [mangled] + sorted(funcs & tables, key=order.get)
    seen, todo = list(roots), list(roots)
    while todo:
        for callee in sorted((funcs & names_in(bodies[todo.pop()][1])) - set(seen), key=order.get):
            seen.append(callee)
            todo.append(callee)
    return {name: bodies[name] for name in seen}, roots


def names_in(text: str) -> set[str]:
    """The identifiers `text` names outside registers and directives (%r1, .b32): a function it calls or whose
    address it takes (a function pointer) is one of them. One pass over the text, whatever the functions."""
    return set(_NAME.findall(text))


def kernel_ptx(ptx: str, mangled: str) -> str | None:
    """The PTX bodies (comments removed) of the `.entry` named `mangled` and of every `.func` it calls, joined;
    None when there is no such entry."""
    functions = kernel_functions(ptx, mangled)
    return None if functions is None else "\n".join(body for _, body in functions.values())


def _body_after(text: str, at: int) -> str | None:
    """The brace-balanced body that follows a header ending at `at` (past the parameter list and any
    directives), or None for a declaration (ends in ';' before any '{')."""
    depth, i, n = 0, at, len(text)
    while i < n and text[i] != "(" and text[i] not in "{;":
        i += 1
    if i < n and text[i] == "(":
        while i < n:
            depth += text[i] == "("
            depth -= text[i] == ")"
            i += 1
            if depth == 0:
                break
    while i < n and text[i] not in "{;":
        i += 1
    if i >= n or text[i] == ";":
        return None
    start, depth = i, 0
    while i < n:
        depth += text[i] == "{"
        depth -= text[i] == "}"
        i += 1
        if depth == 0:
            return text[start:i]
    return text[start:]


@dataclass(frozen=True)
class Statement:
    """One PTX statement: the labels before it, its guard ("%p1", negated or not; "" for none) and its text."""

    labels: tuple[str, ...]
    guard: str
    negated: bool
    text: str


def statements(body: str) -> list[Statement]:
    """The statements of a function body in order (its braces and directives' scoping braces dropped: a brace
    that starts a statement, or follows its labels, opens or closes a scope, as inline assembly's `{ .reg ...`
    on one line; a statement never starts with a vector operand)."""
    out, labels = [], []
    for raw in _SCOPE.sub(";", _LINE_DIRECTIVE.sub("", body)).split(";"):
        part = " ".join(raw.split()).lstrip("{} ")
        while (m := _LABEL.match(part)) and not part.startswith("@"):
            labels.append(m.group(1))
            part = m.group(2).strip().lstrip("{} ")
        if not part:
            continue
        g = _GUARD.match(part)
        out.append(Statement(tuple(labels), g.group(2) if g else "", bool(g and g.group(1)),
                             g.group(3).strip() if g else part))
        labels = []
    if labels:
        out.append(Statement(tuple(labels), "", False, "ret"))
    return out


def _known_registers(body: list[Statement], entry: str, integers: frozenset[int], high: int
                     ) -> dict[str, tuple[int, int]]:
    """{register: (lowest, highest)} for the registers of `body` whose one definition (as any destination: a
    vector load's, a second predicate's) loads an integer parameter (index in `integers`: 0 .. `high`), copies such
    a register, or masks it (`and` with a constant or another such register, `or` of two: `high` is 2^31 - 1, so
    the result stays within 0 .. 2^k - 1 for the widest of them under 2^k)."""
    defs: dict[str, list[str]] = {}
    for s in body:
        for reg in destinations(s.text):  # a guarded definition may not happen: its register is never known
            defs.setdefault(reg, []).append("" if s.guard else s.text)
    known: dict[str, tuple[int, int]] = {}
    for _ in range(6):  # copies of copies
        for reg, texts in defs.items():
            if len(texts) != 1 or reg in known:
                continue
            if (m := _LD_PARAM.match(texts[0])) and m.group(2) == entry and int(m.group(3)) in integers:
                known[reg] = (0, high)
            elif (m := _COPY.match(texts[0])) and m.group(2) in known:
                known[reg] = known[m.group(2)]
            elif (m := _BITS.match(texts[0])) and (r := _masked(m.group(1), m.group(3), m.group(4), known)):
                known[reg] = r
    return known


def destinations(text: str) -> list[str]:
    """The registers a statement may write (its first operand's: reading it as written errs on the safe side)."""
    m = _DESTS.match(text)
    return _REG.findall(m.group(1)) if m else []


def _masked(op: str, a: str, b: str, known: dict[str, tuple[int, int]]) -> tuple[int, int] | None:
    """The range of `a op b` (op "and" or "or") where it follows from known ranges, each within 0 .. 2^31 - 1."""
    ra, rb = known.get(a.strip()), known.get(b.strip())
    if op == "or":
        return (0, (1 << max(ra[1], rb[1]).bit_length()) - 1) if ra and rb else None
    if ra and rb:
        return 0, min(ra[1], rb[1])
    r, other = (ra, b) if ra else (rb, a) if rb else (None, "")
    mask = literal(other)
    if r is None or mask is None:
        return None
    return 0, min(r[1], mask & ((1 << r[1].bit_length()) - 1))


def _value(operand: str, known: dict[str, tuple[int, int]], signed: bool, bits: int) -> tuple[int, int] | None:
    """`operand`'s range as the comparison reads it, or None when unknown."""
    operand = operand.strip()
    if operand in known:
        return known[operand]
    v = literal(operand)
    if v is None:
        return None
    v %= 1 << bits
    if signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v, v


def literal(text: str) -> int | None:
    """The value of a PTX integer literal (_LITERALS, an optional minus), or None when `text` is not one."""
    text = text.strip()
    negative, digits = text.startswith("-"), text.lstrip("-").rstrip("uU")
    for pattern, base in _LITERALS:
        if pattern.fullmatch(digits):
            value = int(digits[2:] if base in (16, 2) else digits, base)
            return -value if negative else value
    return None


def _decided(op: str, a: tuple[int, int], b: tuple[int, int]) -> bool | None:
    """The comparison `a op b` when it holds for every pair of values of the two ranges, or fails for every
    one; None otherwise."""
    (a0, a1), (b0, b1) = a, b
    rules = {"lt": (a1 < b0, a0 >= b1), "le": (a1 <= b0, a0 > b1), "gt": (a0 > b1, a1 <= b0),
             "ge": (a0 >= b1, a1 < b0), "eq": (a0 == a1 == b0 == b1, a1 < b0 or b1 < a0)}
    if op == "ne":
        always, never = rules["eq"]
        return True if never else False if always else None
    always, never = rules[op]
    return True if always else False if never else None


def _predicates(body: list[Statement], known: dict[str, tuple[int, int]]) -> dict[str, bool]:
    """{predicate register: its value for every launch} for the predicates with one definition, a decided
    setp."""
    defs: dict[str, list[Statement]] = {}
    for s in body:
        for reg in destinations(s.text):
            defs.setdefault(reg, []).append(s)
    out = {}
    for reg, ss in defs.items():
        m = _SETP.match(ss[0].text) if len(ss) == 1 and not ss[0].guard else None
        if not m:
            continue
        op, signed, bits = _UNSIGNED.get(m.group(1), m.group(1)), m.group(2) == "s", int(m.group(3))
        signed = signed and m.group(1) not in _UNSIGNED
        a, b = _value(m.group(5), known, signed, bits), _value(m.group(6), known, signed, bits)
        if a is not None and b is not None and (value := _decided(op, a, b)) is not None:
            out[reg] = value
    return out


def reached(body: str, entry: str, integers: frozenset[int], high: int) -> list[Statement]:
    """The statements of the function `body` (named `entry`) that a launch can reach when each parameter whose
    index is in `integers` holds a value in 0 .. `high` (module docstring); in order."""
    return _walk(statements(body), entry, integers, high)


def _walk(ss: list[Statement], entry: str, integers: frozenset[int], high: int) -> list[Statement]:
    """reached, on the function's statements `ss`."""
    at = {label: i for i, s in enumerate(ss) for label in s.labels}
    taken = _predicates(ss, _known_registers(ss, entry, integers, high))
    seen: set[int] = set()
    todo = [0]
    while todo:
        i = todo.pop()
        while i < len(ss) and i not in seen:
            seen.add(i)
            s = ss[i]
            word = s.text.split()[0]
            value = taken.get(s.guard) if s.guard else True
            if value is not None and s.negated:
                value = not value
            if word.startswith(("bra", "brx")):
                target = at.get(s.text.split()[-1]) if word.startswith("bra") else None
                if target is None:  # an indirect branch (brx.idx) or a target not read: every statement
                    todo.extend(range(len(ss)))
                    break
                if value is not False:
                    todo.append(target)
                if value is True:
                    break
            elif word in ("ret", "exit") and value is True:
                break
            i += 1
    return [ss[i] for i in sorted(seen)]


def reachable_divisions(ptx: str, mangled: str, integers: frozenset[int], high: int) -> tuple[str, ...]:
    """The distinct integer div/rem opcodes ('div.u32', 'rem.u64') of the kernel `mangled` in `ptx` on a path a
    launch can take when every parameter whose index (0-based, as the kernel declares them) is in `integers`
    holds a value in 0 .. `high`, and in every `.func` such a path calls, any whose address is taken (in the
    kernel, a function it runs, or a module-scope table: a function pointer may call it); () when there is no
    such kernel."""
    read = _functions(ptx, mangled)
    if read is None:
        return ()
    functions, roots = read
    found: set[str] = set()
    todo, done = list(roots), set()
    while todo:
        name = todo.pop()
        done.add(name)
        ss = statements(functions[name][1])
        live = _walk(ss, name, integers if name == mangled else frozenset(), high)
        texts = [s.text for s in live] + [s.text for s in ss if not s.text.startswith("call")]
        for s in live:
            found.update(INT_DIV.findall(s.text))
        named = names_in("\n".join(texts))
        todo.extend(f for f in functions if f in named and f not in done and f not in todo and f != name
                    and functions[f][0] == "func")
    return tuple(sorted(found))
