"""The parameter list from the compiled object (grader.compile.cubin), never from text a submission writes.

cuobjdump -elf (the `sass` extra) and nvcc (the CUDA toolkit) are the oracles: for each kernel of a set (pointers,
integers, floating point, structs by value, __grid_constant__, alignment gaps, a struct large enough for
EIATTR_KPARAM_INFO_V2, a hundred parameters, none), the ordinals, offsets and sizes read here are those cuobjdump
prints, for NVRTC's cubins of four arches and for nvcc's own cubin. The tests skip with a reason where a tool is
missing.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess

import pytest

from grader.compile import cubin
from grader.compile.nvrtc import compile_kernels
from grader.core.errors import GraderFault, SubmissionError
from grader.exercises.bias_gelu.exercise import EXERCISE as _BG  # noqa: E402
from grader.feedback import sass
from grader.source.contract import parse_contract as _parse  # noqa: E402
from grader.source.signature import check_params, source_signature

PAGE_CONTRACT = _parse("", "page.cu", _BG)
"""The page's launch: nothing declared."""

CUOBJDUMP = sass.find_tool("cuobjdump")
NVCC = shutil.which("nvcc")
needs_cuobjdump = pytest.mark.skipif(CUOBJDUMP is None, reason="no cuobjdump: pip install \".[sass]\" "
                                     "(nvidia-cuda-cuobjdump) to check the cubin reader against it")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="no nvcc on PATH (the CUDA toolkit): nvcc's cubins are not "
                                "checked")

FORGED_BODY = r"""{
    // A block comment written by inline asm: PTX text that reads as a 4-parameter .entry of this kernel.
    asm volatile("/*\n.visible .entry NAME(\n.param .u64 a,\n.param .u64 b,\n.param .u64 c,\n.param .u32 d\n)\n*/");
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) out[i] = x[i] + bias[i % cols];
}
"""
FIVE = "(const float* x, const float* bias, float* out, int rows, int cols)"

STRUCTS = r"""
struct S12 { float a, b, c; };
struct __align__(16) S16 { float a; };
struct Gap { char c; double d; };
struct Big { char bytes[20000]; };
"""
KERNELS = {  # name: (parameter list, the sizes C++ gives them)
    "pointers": ("(const float* x, float* __restrict__ o, const double* d, void* v)", [8, 8, 8, 8]),
    "integers": ("(char c, bool b, short s, int i, unsigned u, long l, long long ll, size_t z)",
                 [1, 1, 2, 4, 4, 8, 8, 8]),
    "floats": ("(float f, double d, float4 v, double2 w, int3 t)", [4, 8, 16, 16, 12]),
    "structs": ("(S12 a, S16 b, Gap g, char c, S12 e)", [12, 16, 16, 1, 12]),
    "grid_constant": ("(const __grid_constant__ S12 g, int n, const __grid_constant__ Gap h)", [12, 4, 16]),
    "alignment": ("(char a, double b, char c, int d, short e, long long f)", [1, 8, 1, 4, 2, 8]),
    "large": ("(Big b, int n, char c)", [20000, 4, 1]),
    "many": ("(" + ", ".join(f"int p{i}" for i in range(100)) + ")", [4] * 100),
    "none": ("()", []),
}
SOURCE = STRUCTS + "".join(f'extern "C" __global__ void {k}{p} {{}}\n' for k, (p, _) in KERNELS.items())


def test_an_asm_comment_that_forges_an_entry_does_not_hide_a_parameter():
    # the PTX holds a second `.entry biasGeluFused(` with 4 parameters; the kernel has 5: the launch of 4
    # arguments would be refused (the contract's default list is x, bias, out, cols)
    for decl, mangled in (('extern "C" __global__ void biasGeluFused', "biasGeluFused"),
                          ("__global__ void biasGeluFused", "_Z13biasGeluFusedPKfS0_Pfii")):
        text = decl + FIVE + FORGED_BODY.replace("NAME", mangled)
        compiled = compile_kernels(text, "s.cu", ("biasGeluFused",), "sm_90")
        assert compiled.ptx.count(f".entry {mangled}(") == 2  # the forgery is in the PTX
        info = compiled.kernels["biasGeluFused"]
        assert [(p.ptx_type, p.size) for p in info.params] == [("u64", 8)] * 3 + [("u32", 4)] * 2
        with pytest.raises(SubmissionError, match="the kernel has 5 parameters, the launch passes 4"):
            check_params(PAGE_CONTRACT, [(p.ptx_type, p.size) for p in info.params],
                         source_signature(text, "biasGeluFused"), "biasGeluFused")


def test_the_ptx_types_come_from_the_entry_outside_every_body():
    text = 'extern "C" __global__ void k(float f, int n) { asm volatile("// .entry k(.param .u64 a, .param .u64 b)"); }'
    info = compile_kernels(text, "s.cu", ("k",), "sm_90").kernels["k"]
    assert [(p.ptx_type, p.size) for p in info.params] == [("f32", 4), ("u32", 4)]


@pytest.mark.parametrize("arch", ["sm_75", "sm_90", "sm_100", "sm_120"])
def test_sizes_are_the_sizes_cplusplus_gives_the_parameters(arch):
    compiled = compile_kernels(SOURCE, "k.cu", tuple(KERNELS), arch)
    for name, (_, sizes) in KERNELS.items():
        assert [p.size for p in compiled.kernels[name].params] == sizes, name
        assert [p.size for p in cubin.kernel_params(compiled.cubin, name)] == sizes, name


def cuobjdump_params(cubin_bytes: bytes, tmp_path) -> dict[str, list[tuple[int, int, int]]]:
    """{kernel: [(ordinal, offset, size)] sorted by ordinal} as `cuobjdump -elf` prints them."""
    path = tmp_path / "k.cubin"
    path.write_bytes(cubin_bytes)
    out = subprocess.run([CUOBJDUMP.path, "-elf", str(path)], capture_output=True, text=True, check=True).stdout
    params: dict[str, list[tuple[int, int, int]]] = {}
    section = None
    for line in out.splitlines():
        head = re.match(r"^\.nv\.info\.(\S+)$", line)
        if head:
            section = params.setdefault(head.group(1), [])
        elif re.match(r"^\.\S", line):
            section = None
        value = re.search(r"Ordinal : 0x([0-9a-f]+)\s+Offset\s*: 0x([0-9a-f]+)\s+Size\s*: 0x([0-9a-f]+)", line)
        if value and section is not None:
            section.append(tuple(int(v, 16) for v in value.groups()))
    return {k: sorted(v) for k, v in params.items()}


def read_here(cubin_bytes: bytes) -> dict[str, list[tuple[int, int, int]]]:
    return {k: [(p.ordinal, p.offset, p.size) for p in cubin.kernel_params(cubin_bytes, k)]
            for k in cubin.entry_names(cubin_bytes)}


@needs_cuobjdump
@pytest.mark.parametrize("arch", ["sm_75", "sm_90", "sm_100", "sm_120"])
def test_nvrtc_cubins_read_as_cuobjdump_prints_them(arch, tmp_path):
    compiled = compile_kernels(SOURCE, "k.cu", tuple(KERNELS), arch)
    assert read_here(compiled.cubin) == cuobjdump_params(compiled.cubin, tmp_path)
    assert set(cubin.entry_names(compiled.cubin)) == set(KERNELS)


@needs_cuobjdump
@needs_nvcc
def test_nvcc_cubin_reads_as_cuobjdump_prints_it(tmp_path):
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    subprocess.run([NVCC, "-cubin", "-arch=sm_90", "-o", str(tmp_path / "nvcc.cubin"), str(source)], check=True,
                   capture_output=True)
    built = (tmp_path / "nvcc.cubin").read_bytes()
    here = read_here(built)
    assert here == cuobjdump_params(built, tmp_path)
    assert {k: [s for _, _, s in v] for k, v in here.items()} == {k: s for k, (_, s) in KERNELS.items()}


def test_a_device_function_is_no_entry():
    text = ("__device__ __noinline__ float helper(float* a) { return a[0] * 2; }\n"
            "__global__ void k(float* a) { a[1] = helper(a); }\n")
    built = compile_kernels(text, "s.cu", ("k",), "sm_90").cubin
    assert cubin.entry_names(built) == ("_Z1kPf",)
    with pytest.raises(cubin.CubinError, match="no kernel named _Z6helperPf"):
        cubin.kernel_params(built, "_Z6helperPf")


def first_kparam(built: bytes) -> int:
    """The byte offset in `built` of the value of the first EIATTR_KPARAM_INFO record."""
    at = built.find(bytes([cubin.EIFMT_SVAL, cubin.EIATTR_KPARAM_INFO, 12, 0]))
    assert at > 0
    return at + 4


@pytest.mark.parametrize("damage, why", [
    (lambda b, at: b[:40], "too short for an ELF header"),
    (lambda b, at: b"\x7fELF\x01" + b[5:], "not a little-endian ELF-64 cubin"),
    (lambda b, at: b[: at + 4] + struct.pack("<H", 7) + b[at + 6 :], "ordinals"),  # a second parameter 7
    (lambda b, at: b[: at + 8] + struct.pack("<I", 0x3FFF << 18) + b[at + 12 :], "the buffer holds"),
    (lambda b, at: b[: at - 4] + bytes([9]) + b[at - 3 :], "record format 9"),
], ids=["truncated", "32-bit", "ordinal", "size", "format"])
def test_a_cubin_laid_out_otherwise_is_refused(damage, why):
    built = compile_kernels('extern "C" __global__ void k(float* a, int n) {}', "s.cu", ("k",), "sm_90").cubin
    with pytest.raises(cubin.CubinError, match=why):
        cubin.kernel_params(damage(built, first_kparam(built)), "k")


def test_an_unreadable_cubin_is_the_graders_fault(monkeypatch):
    def unreadable(data, mangled):
        raise cubin.CubinError("record format 9 at byte 12 of a .nv.info section")

    monkeypatch.setattr("grader.compile.nvrtc.cubin_params", unreadable)
    with pytest.raises(GraderFault, match="the grader cannot read the parameter list of `k`.*not your code's fault"):
        compile_kernels('extern "C" __global__ void k(float* a) {}', "s.cu", ("k",), "sm_90")
