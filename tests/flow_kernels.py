"""The kernels of tests/data/flow/ (written for these tests, in the forms students write) and tests/data/causes/,
compiled as the pipeline compiles them (NVRTC, sm_90, line information: grader.pipeline.grade.compile_submission)
and read with nvdisasm, for the tests of grader.feedback.sass_flow and grader.feedback.sass_stride; and small
hand-written listings in nvdisasm's form."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from grader.compile.nvrtc import compile_kernels
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.feedback import sass, sass_flow, sass_stride
from grader.feedback.sass_access import PARAM_BASE, Access, accesses
from grader.feedback.sass_flow import Flow
from grader.source.read import read_submission

DATA = Path(__file__).resolve().parent / "data"
FLOW = DATA / "flow"
CAUSES = DATA / "causes"
NVDISASM = sass.find_tool("nvdisasm")
needs_nvdisasm = pytest.mark.skipif(NVDISASM is None, reason="no nvdisasm: pip install \".[sass]\" to test the "
                                                             "control flow and strides of real machine code")


@dataclass(frozen=True)
class Kernel:
    """One compiled kernel: its listing, mangled name, body (instructions), flow, accesses and their strides."""

    listing: sass.Listing
    mangled: str
    body: tuple
    flow: Flow
    accesses: tuple[Access, ...]
    strides: tuple[sass_stride.Stride, ...]

    def at(self, line: int, op: str | None = None, opcode: str | None = None) -> list[int]:
        """Positions of the accesses of source line `line` (with `op`, and an opcode starting with `opcode`)."""
        return [k for k, a in enumerate(self.accesses) if a.line == line and (op is None or a.op == op)
                and (opcode is None or a.opcode.startswith(opcode))]

    def instructions(self, pattern: str) -> list[int]:
        """Indices in the body of the instructions whose opcode and operands match `pattern` (re.search)."""
        return [i for i, ins in enumerate(self.body) if re.search(pattern, f"{ins.opcode} {ins.operands}")]


@cache
def _listing(path: Path) -> tuple[sass.Listing, dict[str, str]]:
    if path.parent == CAUSES:
        sub = read_submission(path, BIAS_GELU)
        text, name, names = sub.compile_text, sub.name, (BIAS_GELU.kernel_name,)
    else:
        text, name = path.read_text(), path.name
        names = tuple(re.findall(r"__global__\s+void\s+(\w+)", text))
    c = compile_kernels(text, name, names, "sm_90", lineinfo=True)
    listing = sass.parse(sass.disassemble(c.cubin, NVDISASM), "nvdisasm")
    return listing, {n: c.kernels[n].mangled for n in names}


@cache
def kernel(name: str, function: str = "biasGeluFused") -> Kernel:
    """Kernel `function` of tests/data/flow/NAME.cu (or tests/data/causes/NAME.cu, where flow/ has none)."""
    if NVDISASM is None:
        pytest.skip("no nvdisasm")
    path = FLOW / f"{name}.cu" if (FLOW / f"{name}.cu").exists() else CAUSES / f"{name}.cu"
    listing, mangled = _listing(path)
    m = mangled[function]
    body = listing.functions[m]
    found, strides = sass_stride.kernel_strides(listing, m)
    assert found == accesses(body, listing.param_base.get(m, PARAM_BASE["sm_90"]), listing.labels.get(m))
    return Kernel(listing, m, body, sass_flow.flow(body, listing.labels.get(m)), found, strides)


def listing_text(*lines: str, name: str = "k") -> str:
    """An nvdisasm listing of one function `name` whose lines are `lines`: a label (`.L_x_1:`), a source line
    (`line 12`) or an instruction (`@P0 BRA `(.L_x_1)`), offsets counted from 0 in steps of 16."""
    out = [f'\t.section\t.text.{name},"ax",@progbits', f"        .type           {name},@function", f"{name}:"]
    offset = 0
    for line in lines:
        if line.endswith(":"):
            out.append(line)
        elif line.startswith("line "):
            out.append(f'\t//## File "/k.cu", line {line.split()[1]}')
        else:
            out.append(f"        /*{offset:04x}*/                   {line} ;")
            offset += 16
    return "\n".join(out) + "\n"


def parsed(*lines: str, name: str = "k") -> tuple[tuple, dict[str, int]]:
    """(instructions, labels) of listing_text(*lines)."""
    listing = sass.parse_nvdisasm(listing_text(*lines, name=name))
    return listing.functions[name], listing.labels.get(name, {})
