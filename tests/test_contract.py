"""The `// grade:` block: defaults, declarations, the student's row and claim, launch plans, parameter checks."""

import numpy as np
import pytest

from grader import exercise
from grader.contract import (Contract, check_params, kernel_args, parse_claim, parse_contract, parse_row,
                             plan_launch, source_signature)
from grader.errors import InputError, SubmissionError


def test_defaults_are_the_pages_launch():
    c = parse_contract("__global__ void biasGeluFused() {}", "s.cu")
    assert c.params == ("x", "bias", "out", "cols")
    plan = plan_launch(c, 101, 97, 132, 2048)
    assert plan.grid == (1, 101, 1) and plan.block == (256, 1, 1)


def test_declared_launches():
    c = parse_contract("// grade: params = x, bias, out, n, cols\n// grade: grid = flat\n"
                       "// grade: block = 128\n// grade: elems_per_thread = 4\n", "s.cu")
    assert plan_launch(c, 101, 97, 132, 2048).grid == (-(-101 * 97 // 512), 1, 1)
    s = parse_contract("// grade: params = x, bias, out, rows, cols\n// grade: grid = stride 264\n", "s.cu")
    assert plan_launch(s, 101, 97, 132, 2048).grid == (264, 1, 1)
    d = parse_contract("// grade: params = x, bias, out, rows, cols\n// grade: grid = stride\n", "s.cu")
    assert plan_launch(d, 101, 97, 132, 2048).grid == (132 * 2048 // 256, 1, 1)


@pytest.mark.parametrize(
    "block, words",
    [
        ("// grade: blok = 256", "cannot read"),
        ("// grade: block = 100", "multiple of 32"),
        ("// grade: block = 2048", "outside"),
        ("// grade: grid = diagonal", "row"),
        ("// grade: params = x, bias, out, cols, k", "unknown name"),
        ("// grade: params = x, out, cols", "missing bias"),
        ("// grade: params = x, bias, out, n", "include cols"),
        ("// grade: params = x, bias, out, cols\n// grade: grid = flat", "flat grid needs rows or n"),
        ("// grade: block = 128\n// grade: block = 256", "twice"),
    ],
)
def test_malformed_blocks_are_input_errors_naming_the_line(block, words):
    with pytest.raises(InputError, match=words):
        parse_contract(block + "\n", "s.cu")


def test_row_grid_over_gridDim_y_limit_is_refused():
    with pytest.raises(InputError, match="65535"):
        plan_launch(Contract(), exercise.MAX_GRID_Y + 1, 4, 132, 2048)


def test_student_row_and_claim():
    r = parse_row("biasGeluFused | 1 | 2 | 0.5232 | 4105.2")
    assert (r.version, r.kernels, r.floats_per_elem, r.ms, r.gbs, r.problem) == ("biasGeluFused", 1, 2, 0.5232, 4105.2, None)
    r = parse_row("bias gelu fused 1 3 0.71 286.9 1.17")
    assert r.version == "bias gelu fused" and r.floats_per_elem == 3 and r.x_copy == 1.17
    bad = parse_row("biasGeluFused | one | 2 | fast | 4105")
    assert bad.kernels is None and bad.ms is None and "kernels" in bad.problem
    assert "expected 5 fields" in parse_row("just words").problem
    assert parse_claim("It reached 93% of 244.7 GB/s").fraction == pytest.approx(0.93)
    assert parse_claim("It reached 0.97 of the floor, capped at 1 because ...").fraction == 0.97
    assert parse_claim("It is fast.").fraction is None


def test_source_signature_and_param_check():
    text = "__global__ void __launch_bounds__(256) biasGeluFused(const float* x, const float* b, float* o, int c)"
    written = source_signature(text, "biasGeluFused")
    assert written == ["const float* x", "const float* b", "float* o", "int c"]
    widths = check_params(Contract(), [("u64", 8)] * 3 + [("u32", 4)], written, "biasGeluFused")
    assert widths == (8, 8, 8, 4)
    with pytest.raises(SubmissionError) as err:
        check_params(Contract(), [("u64", 8)] * 3 + [("f32", 4)], None, "biasGeluFused")
    assert "expected: biasGeluFused(const float* x" in err.value.details and ".f32" in err.value.details
    with pytest.raises(SubmissionError, match="should be a 32- or 64-bit integer"):
        check_params(Contract(), [("u64", 8)] * 4, ["const float* x", "const float* b", "float* o", "float* c"],
                     "biasGeluFused")


def test_kernel_args_use_the_kernels_own_widths():
    c = Contract(params=("x", "bias", "out", "rows", "cols", "n"), grid="flat")
    args = kernel_args(c, (8, 8, 8, 4, 8, 4), {"x": 16, "bias": 32, "out": 48}, 101, 97)
    assert [type(a) for a in args] == [np.uint64] * 3 + [np.int32, np.uint64, np.int32]
    assert int(args[5]) == 101 * 97
    with pytest.raises(InputError, match="32-bit"):
        kernel_args(c, (8, 8, 8, 4, 8, 4), {"x": 16, "bias": 32, "out": 48}, 65535, 65535)
