"""NVRTC compilation without a GPU: every example and grader kernel compiles to a cubin; errors read file:line."""

import re

import pytest

from conftest import SUBMISSIONS
from grader.compile.nvrtc import compile_kernels
from grader.core.errors import SubmissionError
from grader.exercises import bias_gelu as exercise
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.source.read import read_submission

EXAMPLES = sorted(p for p in SUBMISSIONS.glob("*.cu") if p.name != "compile_error.cu")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_compiles_to_a_cubin(path):
    sub = read_submission(path, BIAS_GELU)
    c = compile_kernels(sub.compile_text, sub.name, (exercise.KERNEL_NAME,), "sm_90")
    assert c.cubin[:4] == b"\x7fELF"
    info = c.kernels[exercise.KERNEL_NAME]
    assert info.registers and info.spill_stores == 0
    assert len(info.params) == len(sub.contract.params)


@pytest.mark.parametrize("package, source, kernels", [
    ("grader.gpu.kernels", "floor.cu", ("copyScalar", "copyVec4")),
    ("grader.gpu.kernels", "inputs.cu", ("fillUniform", "fillDraw")),
    ("grader.exercises.bias_gelu", "check.cu", ("checkBiasGelu",))])
def test_grader_kernels_compile(package, source, kernels):
    """Each of the grader's own CUDA sources, with draws.cuh put in its place (grader.gpu.kernels.source_text)."""
    from grader.gpu.kernels import source_text

    text = source_text(package, source)
    assert set(compile_kernels(text, source, kernels, "sm_90").kernels) == set(kernels)


def test_compile_error_is_file_line_message():
    sub = read_submission(SUBMISSIONS / "compile_error.cu", BIAS_GELU)
    with pytest.raises(SubmissionError) as err:
        compile_kernels(sub.compile_text, sub.name, (exercise.KERNEL_NAME,), "sm_90")
    assert err.value.stage == "compile"
    assert re.search(r"^compile_error\.cu:6: error: expected a \";\"", err.value.details, re.M)


def test_extern_c_and_cpp_kernels_are_both_found():
    for decl in ('extern "C" __global__', "__global__"):
        c = compile_kernels(f"{decl} void biasGeluFused(const float* x, float* o, int n) {{}}\n", "s.cu",
                            ("biasGeluFused",), "sm_90")
        assert [(p.ptx_type, p.size) for p in c.kernels["biasGeluFused"].params] == [("u64", 8), ("u64", 8), ("u32", 4)]


def test_missing_kernel_lists_the_names_found():
    with pytest.raises(SubmissionError, match="kernels found: biasGelu, helper"):
        compile_kernels("__global__ void biasGelu(float* a) {}\n__global__ void helper() {}\n", "s.cu",
                        ("biasGeluFused",), "sm_90")


def test_device_function_is_not_a_kernel():
    with pytest.raises(SubmissionError, match="no __global__ kernel named `biasGeluFused`; kernels found: k"):
        compile_kernels("__device__ void biasGeluFused(float* a) {}\n"
                        "__global__ void k(float* a) { biasGeluFused(a); }\n",
                        "s.cu", ("biasGeluFused",), "sm_90")


@pytest.mark.parametrize("arch", ["sm_75", "sm_90", "sm_100", "sm_120"])
def test_parameter_list_is_read_for_every_arch(arch):
    # sm_100 and later write pointers as `.param .u64 .ptr .align 1 name`.
    sub = read_submission(SUBMISSIONS / "gold_float4.cu", BIAS_GELU)
    info = compile_kernels(sub.compile_text, sub.name, (exercise.KERNEL_NAME,), arch).kernels[exercise.KERNEL_NAME]
    assert [(p.ptx_type, p.size) for p in info.params] == [("u64", 8)] * 4


@pytest.mark.parametrize("decl", ["static __global__", "namespace { __global__",
                                  "namespace ns { __global__ void biasGeluFused(float*); }\nusing ns::biasGeluFused;\n"
                                  "namespace ns { __global__"])
def test_static_and_namespaced_kernels_are_found(decl):
    close = " }" if "namespace" in decl else ""
    text = f"{decl} void biasGeluFused(float* o) {{}}{close}\n"
    assert compile_kernels(text, "s.cu", ("biasGeluFused",), "sm_90").kernels["biasGeluFused"].params


@pytest.mark.parametrize("text", [
    "template <int N> __global__ void biasGeluFused(float* o) {}\ntemplate __global__ void biasGeluFused<4>(float*);\n",
    "namespace ns { __global__ void biasGeluFused(float* o) {} }\n",
])
def test_unreachable_kernel_gets_a_message_that_says_why(text):
    with pytest.raises(SubmissionError, match="as a template, an overload or inside a namespace"):
        compile_kernels(text, "s.cu", ("biasGeluFused",), "sm_90")
