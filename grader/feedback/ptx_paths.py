"""A kernel's PTX as functions, and which of its instructions a launch of the grader can reach.

Why (issue 32): the RoPE page's own advice is "32-bit division when pairs < 2^31", and a kernel that takes it
keeps the page's size_t body for larger tensors:

    if (pairs < (size_t(1) << 31)) { ... 32-bit pos and j ... } else { ... p / (half * heads) in size_t ... }

Its machine code still calls CUDA's 64-bit division routine, on a path no launch of the grader takes: every
integer the grader passes a kernel is at most grader.core.exercise.INT32_LIMIT (every benchmark buffer holds
fewer than 2^31 floats, every verification shape is small). A hint about that division would tell the student
to do what they did. And for one launch (issue 39), exact values of its sizes decide more: "does the timed launch
at cols = 4096 take the float4 path or the fallback with i % cols?"

The reading: each function's statements in order, with their `{ }` scopes and each name resolved as ptxas
resolves it (grader.feedback.ptx_statements: a label in the innermost enclosing block that declares it, so two
inline-asm blocks may reuse one; predicates with or without `%`), walked from the top. A branch (`bra`, `ret`,
`exit`, guarded or not) goes one way only where every launch decides its guard alike (grader.feedback.ptx_values:
the values of registers that follow from the kernel's integer parameters, each in 0 .. `high` or at an exact
value, and literals, through cvt, mov, add, and, setp, selp and the rest). Every other branch goes both ways;
an indirect one (`brx.idx`) marks every statement of its function reached, once. A `.func` is walked (its
parameters unknown) when a reached statement calls it, or when anything takes its address (a function pointer,
a virtual call, a module-scope table), wherever that is. Anything unsure is reachable: the reading only
removes paths that no launch takes. The work is linear in the statements, and a Budget of STEPS_PER_STATEMENT
steps per statement bounds it: past it, every division counts as reached (Reach.exhausted).

tests/test_ptx_paths.py holds kernels written to break it (a loop whose vector load rewrites the parameter's
register, an octal literal, a branch back through `brx.idx`, a table of function pointers, two inline-asm
blocks with one label, a guard `@q`, 8192 indirect branches).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grader.feedback.ptx_statements import (
    COMMENT,
    Budget,
    Instr,
    OverBudget,
    Statement,
    destinations,
    literal,
    parse,
    resolve,
    statements,
)
from grader.feedback.ptx_values import guards

__all__ = ["CALL", "COMMENT", "HEADER", "INT_DIV", "STEPS_PER_STATEMENT", "DivisionSite", "Reach", "Statement",
           "destinations", "division_sites", "kernel_functions", "kernel_ptx", "literal", "names_in", "reach",
           "reachable_divisions", "reached", "statements"]

HEADER = re.compile(r"^[ \t]*(?:\.(?:visible|weak|extern)\s+)*\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)", re.M)
CALL = re.compile(r"\bcall(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?([\w$]+)")
INT_DIV = re.compile(r"\b(?:div|rem)(?:\.full)?\.[us](?:16|32|64)\b")
"""An integer division or remainder: in PTX from NVRTC its divisor is known only at run time (a division by a
constant becomes mul.hi and shifts)."""

STEPS_PER_STATEMENT = 128
"""The budget of a reading: this many steps (Reach.steps) per statement or brace of the bodies it reads. The
kernels of submissions/ take at most 40 (tests/test_ptx_paths.py); past it every division counts as reached."""
_ARGUMENT = re.compile(r"\.param\s+[^,]*")
_NAME = re.compile(r"(?<![\w$%.])[\w$]+")
_INITIALIZER = re.compile(r"=\s*(\{[^;]*\}|[^;{]+);")


def kernel_functions(ptx: str, mangled: str) -> dict[str, tuple[str, str]] | None:
    """{name: (kind "entry" or "func", body)} of the `.entry` named `mangled` (first) and of every `.func` it
    may run: those it or they name (a call, or an address taken for a function pointer) and those a module-scope
    initializer names (a table of function pointers); bodies brace-balanced, comments removed. None when `ptx`
    has no such entry."""
    found = _functions(ptx, mangled)
    return None if found is None else found[0]


def _functions(ptx: str, mangled: str) -> tuple[dict[str, tuple[str, str]], list[str], str] | None:
    """(kernel_functions' answer, the functions a launch starts in: the entry, then those a module-scope
    initializer names, the entry's header: its parameter list and directives), or None when `ptx` has no entry
    `mangled`."""
    text = COMMENT.sub("", ptx)
    bodies: dict[str, tuple[str, str]] = {}
    outside, at, header = [], 0, ""  # the module-scope text between the bodies
    for m in HEADER.finditer(text):
        body = _body_after(text, m.end())
        if body is not None:
            bodies[m.group(2)] = (m.group(1), body)
            start = text.index(body, m.end())
            header = text[m.end():start] if m.group(2) == mangled else header
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
    return {name: bodies[name] for name in seen}, roots, header


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
class DivisionSite:
    """A reached integer div or rem: its function, its index in statements() of the function's body, its opcode
    ('div.u32') and whether it may run more than once per thread (in_loop): it lies between a label and a later
    reached backward branch that may go to it (a `brx.idx`: to any statement before it), or its function is
    called from such a place, from two places, through a pointer or recursively. in_loop False: at most once per
    thread of the launch."""

    function: str
    index: int
    opcode: str
    in_loop: bool


@dataclass(frozen=True)
class Reach:
    """What a launch reaches in a kernel: each walked function's reached statements (the entry first), the
    division sites among them (a statement whose guard every launch decides false does not run), the steps the
    reading took (linear in the statements) and whether it ran out of its budget (exhausted: then every statement
    counts as reached and every division as in a loop)."""

    statements: dict[str, tuple[Statement, ...]]
    sites: tuple[DivisionSite, ...]
    steps: int
    exhausted: bool

    @property
    def divisions(self) -> tuple[str, ...]:
        """The distinct opcodes of the reached divisions, sorted."""
        return tuple(sorted({s.opcode for s in self.sites}))

    @property
    def looped(self) -> tuple[str, ...]:
        """The distinct opcodes of the reached divisions that may run more than once per thread (in_loop)."""
        return tuple(sorted({s.opcode for s in self.sites if s.in_loop}))

    @property
    def straight(self) -> tuple[str, ...]:
        """The distinct opcodes with a reached site that runs at most once per thread (straight-line code)."""
        return tuple(sorted({s.opcode for s in self.sites if not s.in_loop}))


def reach(ptx: str, mangled: str, integers: frozenset[int], high: int, exact: dict[int, int] | None = None
          ) -> Reach | None:
    """What a launch of the kernel `mangled` in `ptx` reaches when every parameter whose index (0-based, as the
    kernel declares them) is in `integers` holds a value in 0 .. `high`, and the parameter at each index of
    `exact` holds exactly its value (the timed launch's rows, cols, n: {3: 4096}); pointers and other parameters
    are unknown. None when `ptx` has no entry `mangled`. Never raises on odd PTX: what it cannot read is
    reachable, and past its budget (STEPS_PER_STATEMENT) everything is."""
    read = _functions(ptx, mangled)
    if read is None:
        return None
    functions, roots, header = read
    params = {i: (0, high) for i in integers} | {i: (v, v) for i, v in (exact or {}).items()}
    size = sum(body.count(";") + body.count("{") + 1 for _, body in functions.values())
    budget = Budget(STEPS_PER_STATEMENT * size)
    try:
        return _reach(functions, roots, params, _param_bits(header, mangled), budget)
    except OverBudget:
        return _everything(functions, budget.steps)


def _reach(functions: dict[str, tuple[str, str]], roots: list[str], params: dict[int, tuple[int, int]],
           param_bits: dict[int, int], budget: Budget) -> Reach:
    """reach's answer within `budget` (raises OverBudget past it)."""
    entry, funcs = roots[0], {f for f, (kind, _) in functions.items() if kind == "func"}
    order = {name: i for i, name in enumerate(functions)}
    walked: dict[str, tuple[list[Statement], list[Instr], dict[int, bool], bytearray, bytearray]] = {}
    edges: list[tuple[str, str, bool]] = []
    taken = set(roots[1:])
    todo = list(reversed(roots))
    while todo:
        name = todo.pop()
        if name in walked:
            continue
        ss, parents = parse(functions[name][1], budget)
        code = resolve(ss, parents, budget)
        decided = guards(code, name, params if name == entry else {}, param_bits if name == entry else None,
                         budget)
        seen = _walk(code.code, decided, budget)
        loop = _loops(code.code, seen, decided, budget)
        walked[name] = (ss, code.code, decided, seen, loop)
        for i, s in enumerate(ss):
            budget.charge()
            named = funcs & names_in(s.text)
            if not named:
                continue
            callee = m.group(1) if s.text.startswith("call") and (m := CALL.match(s.text)) else None
            if callee in named and seen[i]:
                edges.append((name, callee, bool(loop[i])))
            taken |= named - {callee} if callee else named
            todo.extend(sorted((named if seen[i] or not callee else named - {callee}) - walked.keys(),
                               key=order.get, reverse=True))
    mult = _multiplicity(list(walked), entry, edges, taken, budget)
    sites = []
    for name, (ss, _, decided, seen, loop) in walked.items():
        for i, s in enumerate(ss):
            if seen[i] and decided.get(i) is not False and (ops := INT_DIV.findall(s.text)):
                sites += [DivisionSite(name, i, op, bool(loop[i]) or mult[name] > 1) for op in ops]
    reached_ss = {name: tuple(s for s, k in zip(w[0], w[3], strict=True) if k) for name, w in walked.items()}
    return Reach(reached_ss, tuple(sites), budget.steps, False)


def _walk(code: list[Instr], decided: dict[int, bool], budget: Budget) -> bytearray:
    """Which statements a launch reaches, from the first: a branch goes to its targets unless its guard is
    decided false, and on unless it is decided true (or has none); an indirect branch, or one whose label is
    not read, reaches every statement, once."""
    n = len(code)
    seen, todo, everything = bytearray(n), [0], False
    while todo:
        i = todo.pop()
        while i < n and not seen[i]:
            budget.charge()
            seen[i] = 1
            ins = code[i]
            value = decided.get(i) if ins.guard is not None else True
            if ins.kind == "brx" or (ins.kind == "bra" and ins.targets is None):
                if value is not False and not everything:
                    everything = True
                    todo.extend(range(n))
                if value is True:
                    break
            elif ins.kind == "bra":
                if value is not False:
                    budget.charge(len(ins.targets))
                    todo.extend(ins.targets)
                if value is True:
                    break
            elif ins.kind == "ret" and value is True:
                break
            i += 1
    return seen


def _loops(code: list[Instr], seen: bytearray, decided: dict[int, bool], budget: Budget) -> bytearray:
    """Which statements lie between a label and a later reached branch that may go back to it (an indirect
    one: back to any statement before it). Every statement of a cycle of the reached paths is one of them."""
    n = len(code)
    depth = [0] * (n + 1)
    for i, ins in enumerate(code):
        budget.charge()
        if not seen[i] or ins.kind not in ("bra", "brx") or decided.get(i) is False:
            continue
        for t in ins.targets if ins.kind == "bra" and ins.targets is not None else (0,):
            if t <= i:
                depth[t] += 1
                depth[i + 1] -= 1
    out, running = bytearray(n), 0
    for i in range(n):
        running += depth[i]
        out[i] = running > 0
    return out


def _multiplicity(names: list[str], entry: str, edges: list[tuple[str, str, bool]], taken: set[str],
                  budget: Budget) -> dict[str, int]:
    """{function: 1 when it runs at most once per thread, else 2}: the entry once; a function whose address is
    taken, or on or below a cycle of calls, twice; else the sum over its reached calls of the caller's count
    (twice for a call in a loop)."""
    mult = {f: 2 if f in taken else 0 for f in names}
    mult[entry] = 1
    out: dict[str, list[tuple[str, bool]]] = {f: [] for f in names}
    waiting = dict.fromkeys(names, 0)
    for caller, callee, looped in edges:
        out[caller].append((callee, looped))
        waiting[callee] += 1
    ready = [f for f in names if waiting[f] == 0]
    while ready:
        caller = ready.pop()
        for callee, looped in out[caller]:
            budget.charge()
            mult[callee] = min(2, mult[callee] + mult[caller] * (2 if looped else 1))
            waiting[callee] -= 1
            if waiting[callee] == 0:
                ready.append(callee)
    return {f: 2 if waiting[f] else mult[f] for f in names}


def _everything(functions: dict[str, tuple[str, str]], steps: int) -> Reach:
    """The Reach of a reading past its budget: every statement of every function reached, every division in a
    loop."""
    walked = {name: tuple(statements(body)) for name, (_, body) in functions.items()}
    sites = tuple(DivisionSite(name, i, op, True) for name, ss in walked.items() for i, s in enumerate(ss)
                  for op in INT_DIV.findall(s.text))
    return Reach(walked, sites, steps, True)


def _param_bits(header: str, entry: str) -> dict[int, int]:
    """{parameter index: its width in bits} for the integer scalars among the entry's parameters, as its header
    declares them (`.param .u32 k_param_2`; an array `.b8 k_param_3[16]`, a struct, is none)."""
    inside = header[header.find("(") + 1:header.rfind(")")] if "(" in header else ""
    name = re.compile(rf"(?<![\w$]){re.escape(entry)}_param_(\d+)(?![\w$])(\s*\[)?")
    out = {}
    for declaration in _ARGUMENT.findall(inside):
        m, kind = name.search(declaration), re.search(r"\.([bsu])(8|16|32|64)\b", declaration)
        if m and kind and not m.group(2):
            out[int(m.group(1))] = int(kind.group(2))
    return out


def reachable_divisions(ptx: str, mangled: str, integers: frozenset[int], high: int,
                        exact: dict[int, int] | None = None) -> tuple[str, ...]:
    """The distinct integer div/rem opcodes ('div.u32', 'rem.u64') of the kernel `mangled` in `ptx` on a path a
    launch can take when every parameter whose index (0-based, as the kernel declares them) is in `integers`
    holds a value in 0 .. `high` (and each at an index of `exact` exactly its value), and in every `.func` such a
    path calls, any whose address is taken (in the kernel, a function it runs, or a module-scope table: a
    function pointer may call it); () when there is no such kernel. Reach.divisions of reach()."""
    found = reach(ptx, mangled, integers, high, exact)
    return () if found is None else found.divisions


def division_sites(ptx: str, mangled: str, integers: frozenset[int], high: int,
                   exact: dict[int, int] | None = None) -> tuple[DivisionSite, ...]:
    """The reached divisions of reachable_divisions, each with its function, statement and whether it may run
    more than once per thread (DivisionSite.in_loop: "once per thread or once per loop iteration?"); ()
    when there is no such kernel."""
    found = reach(ptx, mangled, integers, high, exact)
    return () if found is None else found.sites


def reached(body: str, entry: str, integers: frozenset[int], high: int, exact: dict[int, int] | None = None,
            header: str = "") -> list[Statement]:
    """The statements of the function `body` (named `entry`) that a launch can reach when each parameter whose
    index is in `integers` holds a value in 0 .. `high` and each of `exact` its value (module docstring); in
    order. `header`: the function's parameter list, whose widths bound the loads read as parameters (without
    it, a load is taken to read a whole parameter). Past the budget, every statement."""
    params = {i: (0, high) for i in integers} | {i: (v, v) for i, v in (exact or {}).items()}
    budget = Budget(STEPS_PER_STATEMENT * (body.count(";") + body.count("{") + 1))
    try:
        ss, parents = parse(body, budget)
        code = resolve(ss, parents, budget)
        seen = _walk(code.code, guards(code, entry, params, _param_bits(header, entry) if header else None,
                                       budget), budget)
    except OverBudget:
        return statements(body)
    return [s for s, k in zip(ss, seen, strict=True) if k]
