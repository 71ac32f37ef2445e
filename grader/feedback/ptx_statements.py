"""A PTX function body as statements, each with its `{ }` scope, and what each name in them resolves to.

PTX ISA "Statements" and "Identifiers": a statement is `[labels:] [@[!]pred] opcode operands;` or a directive; a
`{ }` block opens a scope (inline assembly's `{ .reg .pred p; ... }`, a call sequence's). The resolution follows
ptxas (CUDA 13's ptxas, checked by compiling small PTX, tests/test_ptx_paths.py):

- a label is visible in its whole block, before and after it, and in the blocks inside it; a branch goes to the
  label of the innermost enclosing block that declares the name (two inline-asm blocks may both declare `Lx`; a
  block inside may declare a name its outer block has). A label of a sibling or inner block is not visible
  ("Unknown symbol"); two in one block are refused.
- a register (`.reg`, with or without `%`: `.reg .pred q;`) is visible from its declaration to the end of its
  block, the innermost declaration first; `%r<16>` declares %r0 .. %r15, matched by number (`%r02` is %r2), a
  plain name by its spelling. Labels, registers and other variables (`.param`, `.local`, `.shared`) share one
  name space per block.

Where the text is not what ptxas would accept, the reading says so instead of guessing: a branch whose label is
ambiguous goes to every candidate (or to every statement), and a body whose register names could be read two ways
(a `%b01` beside `%b<12>`, a name declared twice in a block) is marked `odd`, so that no register of it is known.
Every loop charges a Budget (a count of steps with a limit): work is linear in the statements.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_LINE_DIRECTIVE = re.compile(r"^\s*\.(?:loc|file)\b[^\n]*$", re.M)
"""Line information (with lineinfo, `.loc 1 26 5` before a statement): a directive with no ';'."""
_PIECE = re.compile(r"[{};]|[^{};]+")
_LABEL = re.compile(r"\s*([%A-Za-z_$][\w$]*)\s*:(?!:)\s*")
_GUARD = re.compile(r"^@\s*(!?)\s*([%A-Za-z_$][\w$]*)\s+(.*)$", re.S)
_IDENT = re.compile(r"(?<![\w$%.])[%A-Za-z_$][\w$]*")
_WORD = re.compile(r"[%A-Za-z_$][\w$]*")
_TRAILING = re.compile(r"^(.*?\D)(\d+)$")
_RANGED = re.compile(r"^([%A-Za-z_$][\w$]*)<(\d+)>$")
_REG_DECL = re.compile(r"^\.reg\s+(?:\.v\d\s+)?\.(\w+)\s+(.*)$", re.S)
_VAR_DECL = re.compile(r"^\.(?:local|shared|param|const|global|tex|sreg)\b")
_PARAM_OPERAND = re.compile(r"^\[\s*(([\w$]+)_param_(\d+))\s*\]$")
_TYPE_BITS = re.compile(r"^[bsuf](8|16|32|64|128)$")
_LITERALS = ((re.compile(r"0[xX][0-9a-fA-F]+"), 16), (re.compile(r"0[bB][01]+"), 2), (re.compile(r"0[0-7]+"), 8),
             (re.compile(r"0|[1-9]\d*"), 10))
"""PTX's integer literals (PTX ISA, "Integer constants"): hexadecimal, binary, octal, decimal; a U suffix."""
MAX_CANDIDATES = 16
"""A branch whose label has more candidates than this (ptxas would refuse it) goes to every statement instead."""


class OverBudget(Exception):
    """The reading took more steps than its Budget allows; its caller counts everything as reached."""


class Budget:
    """A count of steps (`steps`) against `limit` (None: no limit yet); charge() raises OverBudget past it."""

    def __init__(self, limit: int | None = None) -> None:
        self.steps = 0
        self.limit = limit

    def charge(self, n: int = 1) -> None:
        self.steps += n
        if self.limit is not None and self.steps > self.limit:
            raise OverBudget(self.steps)


@dataclass(frozen=True)
class Statement:
    """One PTX statement: the labels before it, its guard's predicate ("%p1" or "q", negated or not; "" for
    none), its text, the scope it sits in (0 outside every brace, 1 the function's body, then each `{` in
    order) and the scope each label belongs to (a label before a `{` is the outer block's)."""

    labels: tuple[str, ...]
    guard: str
    negated: bool
    text: str
    scope: int = 0
    label_scopes: tuple[int, ...] = ()


@dataclass(frozen=True)
class Instr:
    """A statement as the readers use it. ops: each operand, ("#", value) for an integer literal, ("%", key,
    negated) for a register, ("|", key or None, key or None) for a `p|q` destination, ("p", name, index) for
    `[name_param_index]` naming no variable of the body, None otherwise. dests: the registers it may write (its
    first operand's, outside brackets). reads: the registers of its other operands. guard: its predicate's key
    (-1 when the guard names no register; None without a guard). kind: "bra", "brx", "ret" (ret, exit) or "".
    targets: a `bra`'s candidate statement indices; None for every statement."""

    opcode: str
    guard: int | None
    negated: bool
    ops: tuple
    dests: tuple[int, ...]
    reads: tuple[int, ...]
    kind: str
    targets: tuple[int, ...] | None
    labelled: bool


@dataclass
class Code:
    """A body's statements (`ss`), their Instrs (`code`, one each), each register key's width in bits (0: a
    predicate; None: not read as an integer) and whether the register names could be read two ways (`odd`)."""

    ss: list[Statement]
    code: list[Instr]
    widths: dict[int, int | None]
    odd: bool


def statements(body: str) -> list[Statement]:
    """The statements of a function body in order: comments and line directives dropped; a `{` or `}` that
    starts a statement (or follows its labels) opens or closes a scope, any other brace is the statement's own
    (a vector operand {%f1, %f2}); labels at the end of the body label a final "ret"."""
    return parse(body)[0]


def parse(body: str, budget: Budget | None = None) -> tuple[list[Statement], list[int]]:
    """(statements(body), each scope's parent scope: parents[0] is -1, parents[1] is 0 for the body's braces)."""
    budget = budget or Budget()
    text = _LINE_DIRECTIVE.sub("", COMMENT.sub("", body))
    out: list[Statement] = []
    parents, stack = [-1], [0]
    labels: list[str] = []
    scopes: list[int] = []
    part, depth = "", 0  # the statement so far, and the depth of its own braces

    def emit() -> None:
        nonlocal part
        words = " ".join(part.split())
        part = ""
        if not words:
            return
        budget.charge()
        g = _GUARD.match(words)
        out.append(Statement(tuple(labels), g.group(2) if g else "", bool(g and g.group(1)),
                             g.group(3).strip() if g else words, stack[-1], tuple(scopes)))
        labels.clear()
        scopes.clear()

    for piece in _PIECE.findall(text):
        if piece == ";" and not depth:
            emit()
        elif piece == "{" and (depth or part.strip()):
            part, depth = part + piece, depth + 1
        elif piece == "}" and depth:
            part, depth = part + piece, depth - 1
        elif piece in "{}":
            emit()
            budget.charge()
            if piece == "{":
                parents.append(stack[-1])
                stack.append(len(parents) - 1)
            elif len(stack) > 1:
                stack.pop()
        else:
            if not part.strip():
                while m := _LABEL.match(piece):
                    labels.append(m.group(1))
                    scopes.append(stack[-1])
                    piece = piece[m.end():]
            part += piece
    emit()
    if labels:
        out.append(Statement(tuple(labels), "", False, "ret", stack[-1], tuple(scopes)))
    return out, parents


def literal(text: str) -> int | None:
    """The value of a PTX integer literal (_LITERALS, an optional minus), or None when `text` is not one."""
    text = text.strip()
    if not text or not (text[0].isdigit() or text[0] == "-"):
        return None
    negative, digits = text.startswith("-"), text.lstrip("-").rstrip("uU")
    for pattern, base in _LITERALS:
        if pattern.fullmatch(digits):
            value = int(digits[2:] if base in (16, 2) else digits, base)
            return -value if negative else value
    return None


def destinations(text: str) -> list[str]:
    """The register names a statement may write: those of its first operand outside brackets (`%r1`, `q`, each
    of `{%r1, %r2}` or `p|q`). Reading every first operand so errs on the safe side (brx.idx's index)."""
    first = _operands(text)[1:2]
    return _IDENT.findall(re.sub(r"\[[^\]]*\]", "", first[0])) if first else []


def _operands(text: str) -> list[str]:
    """[opcode, operand, ...]: the operands split at the commas outside braces, brackets and parentheses."""
    head, _, rest = text.partition(" ")
    if not ("{" in rest or "[" in rest or "(" in rest):
        return [head, *(x.strip() for x in rest.split(","))] if rest.strip() else [head]
    out, depth, start = [head], 0, 0
    for i, ch in enumerate(rest):
        depth += ch in "{[("
        depth -= ch in "}])"
        if ch == "," and depth == 0:
            out.append(rest[start:i].strip())
            start = i + 1
    if rest.strip():
        out.append(rest[start:].strip())
    return out


class _Names:
    """The names visible at the statement being read: a stack of declarations per name (innermost last)."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.plain: dict[str, list[tuple[int, int]]] = {}  # name: [(depth, key or -1 for a variable)]
        self.ranged: dict[str, list[tuple[int, int, int]]] = {}  # prefix: [(depth, count, declaration)]
        self.labels: dict[str, list[tuple[int, list[int]]]] = {}
        self.keys: dict[tuple[int, int], int] = {}
        self.widths: dict[int, int | None] = {}
        self.odd = False
        self.declarations = 0

    def key(self, declaration: int, index: int, width: int | None) -> int:
        key = self.keys.setdefault((declaration, index), len(self.keys))
        self.widths[key] = width
        return key

    def check(self, name: str) -> None:
        """Mark the body odd where `name` (`%b01`) is spelled with a leading zero that a visible `%b<N>` would read
        as a number: which of the two ptxas takes is not known here."""
        m = _TRAILING.match(name)
        if m and len(m.group(2)) > 1 and m.group(2).startswith("0") and self.ranged.get(m.group(1)):
            self.odd = True

    def register(self, name: str) -> int | None:
        """The key of the register `name` names here; -1 for a variable of the body; None for no declaration."""
        self.budget.charge()
        depth, best = -1, None
        if found := self.plain.get(name):
            depth, best = found[-1]
        m = _TRAILING.match(name)
        self.check(name)
        for d, count, declaration in reversed(self.ranged.get(m.group(1), ()) if m else ()):
            self.budget.charge()
            if d < depth:
                break
            if int(m.group(2)) < count:
                if d == depth:
                    self.odd = True  # `%b1` and `%b<12>` in one block: ptxas refuses it
                else:
                    best = self.key(declaration, int(m.group(2)), self.widths.get(self.keys[(declaration, 0)]))
                break
        return best


def resolve(ss: list[Statement], parents: list[int], budget: Budget) -> Code:
    """The Instrs of `ss` (parse's statements and scopes), each name resolved as ptxas does (module docstring)."""
    depths = [0] * len(parents)
    for s in range(1, len(parents)):
        depths[s] = depths[parents[s]] + 1
    declared: dict[int, dict[str, list[int]]] = {}  # scope: {label: [statement index]}
    everywhere: dict[str, list[int]] = {}
    for i, s in enumerate(ss):
        for label, scope in zip(s.labels, s.label_scopes or (s.scope,) * len(s.labels), strict=True):
            declared.setdefault(scope, {}).setdefault(label, []).append(i)
            everywhere.setdefault(label, []).append(i)
    names = _Names(budget)
    pushed: dict[int, list[tuple[dict, str]]] = {}
    path = [0]

    def enter(scope: int) -> None:
        path.append(scope)
        for label, where in declared.get(scope, {}).items():
            names.labels.setdefault(label, []).append((depths[scope], where))
            pushed.setdefault(scope, []).append((names.labels, label))

    def leave() -> None:
        for table, name in pushed.pop(path.pop(), ()):
            table[name].pop()

    enter(0)
    code = []
    for i, s in enumerate(ss):
        _move(path, s.scope, parents, depths, enter, leave, budget)
        _declare(s, names, depths[s.scope], pushed.setdefault(s.scope, []), i)
        code.append(_instr(s, names, everywhere, len(ss)))
    return Code(ss, code, names.widths, names.odd)


def _move(path: list[int], scope: int, parents: list[int], depths: list[int], enter, leave, budget: Budget) -> None:
    """Leave the scopes of `path` down to the common ancestor with `scope`, then enter those down to it."""
    down, s = [], scope
    while depths[s] > depths[path[-1]]:
        budget.charge()
        down.append(s)
        s = parents[s]
    while s != path[-1]:
        budget.charge()
        leave()
        if depths[s] > depths[path[-1]]:
            down.append(s)
            s = parents[s]
    for s in reversed(down):
        enter(s)


def _declare(s: Statement, names: _Names, depth: int, pushed: list, index: int) -> None:
    """Put the registers or variables that the statement `s` declares on the stacks of `names`."""
    if m := _REG_DECL.match(s.text):
        width = int(t.group(1)) if (t := _TYPE_BITS.match(m.group(1))) else 0 if m.group(1) == "pred" else None
        if s.text.startswith(".reg .v"):
            width = None
        for item in (x.strip() for x in m.group(2).split(",")):
            names.declarations += 1
            if r := _RANGED.match(item):
                if r.group(1)[-1].isdigit():
                    names.odd = True  # `%a1<3>` declares no name ptxas lets one use
                names.key(names.declarations, 0, width)
                names.ranged.setdefault(r.group(1), []).append((depth, int(r.group(2)), names.declarations))
                pushed.append((names.ranged, r.group(1)))
            elif _WORD.fullmatch(item):
                names.check(item)
                names.plain.setdefault(item, []).append((depth, names.key(names.declarations, 0, width)))
                pushed.append((names.plain, item))
            else:
                names.odd = True
    elif _VAR_DECL.match(s.text):
        for name in set(_IDENT.findall(re.sub(r"\[[^\]]*\]", "", s.text.split("=")[0]))):
            names.plain.setdefault(name, []).append((depth, -1))
            pushed.append((names.plain, name))


def _instr(s: Statement, names: _Names, everywhere: dict[str, list[int]], n: int) -> Instr:
    """The Instr of the statement `s`, its names resolved by `names` as they stand at it."""
    parts = _operands(s.text)
    opcode = parts[0]
    if opcode.startswith("."):  # a directive (.reg, .param, .branchtargets, .pragma) writes no register
        return Instr(opcode, None, False, (), (), (), "", None, bool(s.labels))
    ops = tuple(_operand(p, names, first=k == 0) for k, p in enumerate(parts[1:]))
    dests = tuple(k for k in (names.register(x) for x in destinations(s.text)) if k is not None and k >= 0)
    reads = tuple(op[1] for op in ops[1:] if op and op[0] == "%")
    guard = None
    if s.guard:
        guard = names.register(s.guard)
        guard = -1 if guard is None or guard < 0 else guard
    kind = "bra" if opcode.split(".")[0] == "bra" else "brx" if opcode.startswith("brx") else (
        "ret" if opcode.split(".")[0] in ("ret", "exit") else "")
    targets = None
    if kind == "bra" and len(parts) > 1:
        visible = names.labels.get(parts[1].strip())
        found = visible[-1][1] if visible else everywhere.get(parts[1].strip(), [])
        targets = tuple(found) if 0 < len(found) <= MAX_CANDIDATES else None
    return Instr(opcode, guard, s.negated, ops, dests, reads, kind, targets, bool(s.labels))


def _operand(text: str, names: _Names, first: bool):
    """One operand as Instr.ops holds it."""
    negated = text.startswith("!")
    body = text[1:].strip() if negated else text
    if not negated and (v := literal(body)) is not None:
        return ("#", v)
    if _WORD.fullmatch(body):
        key = names.register(body)
        return ("%", key, negated) if key is not None and key >= 0 else None
    if first and "|" in body:
        keys = [names.register(x.strip()) if _WORD.fullmatch(x.strip()) else None for x in body.split("|", 1)]
        return ("|", *(k if k is not None and k >= 0 else None for k in keys))
    if (m := _PARAM_OPERAND.match(body)) and names.register(m.group(1)) is None:
        return ("p", m.group(2), int(m.group(3)))
    return None
