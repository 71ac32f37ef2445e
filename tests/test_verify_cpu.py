"""The comparison and the tolerance, with no GPU: the tanh GELU fails, float32 rounding of a right answer passes."""

import math

import numpy as np
import pytest

from grader.check.verify import compare
from grader.exercises import bias_gelu as exercise
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.exercises.bias_gelu.reference import bias_gelu, gelu_erf, gelu_gap, gelu_tanh, make_inputs


@pytest.fixture
def inputs():
    return make_inputs(np.random.default_rng(1), *exercise.VERIFY_SHAPE)


def test_known_gelu_values():
    assert gelu_erf(np.array([1.0]))[0] == pytest.approx(0.8413447461, abs=1e-10)
    assert gelu_tanh(np.array([1.0]))[0] == pytest.approx(0.8411919906, abs=1e-10)
    assert gelu_erf(np.array([-3.0]))[0] == pytest.approx(-4.049694e-3, abs=1e-9)
    assert gelu_tanh(np.array([-3.0]))[0] == pytest.approx(-3.637392e-3, abs=1e-9)


def test_gelu_gap_matches_the_constant():
    gap, at = gelu_gap()
    assert gap == pytest.approx(exercise.TANH_GAP_MAX, rel=1e-6)
    assert at == pytest.approx(exercise.TANH_GAP_AT, abs=1e-4)


def test_tolerance_sits_10x_inside_both_bounds():
    tol_at_gap = exercise.ATOL + exercise.RTOL * abs(gelu_erf(np.array([exercise.TANH_GAP_AT]))[0])
    assert tol_at_gap * 10 <= exercise.TANH_GAP_MAX
    r = np.linspace(0, 4.5, 1001).astype(np.float32)
    four_ulp = 4 * np.spacing(np.maximum(r, np.float32(1e-3)))  # a generous float32 error of a right kernel
    assert np.all(exercise.ATOL + exercise.RTOL * r >= 10 * four_ulp)


def test_float32_rounding_of_a_correct_kernel_passes(inputs):
    x, bias = inputs
    v = x + bias  # float32 add, as the kernel does
    got = (0.5 * v * (1 + np.vectorize(math.erf)(v.astype(np.float64) / math.sqrt(2)))).astype(np.float32)
    r = compare(got, bias_gelu(x, bias), BIAS_GELU)
    assert r.passed, r.message
    assert r.max_tolerance_share < 0.2, r.message
    page = np.abs(x.astype(np.float64) + bias) < 4.5
    assert np.nanmax(np.abs(got[page] - bias_gelu(x, bias)[page])) < 2e-6


def test_tanh_gelu_fails_with_first_bad_and_both_values(inputs):
    x, bias = inputs
    got = gelu_tanh(x.astype(np.float64) + bias).astype(np.float32)
    r = compare(got, bias_gelu(x, bias), BIAS_GELU, {"x": x, "bias": bias}, BIAS_GELU.problem(x.shape))
    assert not r.passed
    assert r.bad > r.total // 2
    assert r.first_bad is not None
    assert f"(row {r.first_bad.row}, col {r.first_bad.col})" in r.message
    v = x.astype(np.float64) + bias
    page = np.abs(v) < 4.5
    assert np.abs(got - bias_gelu(x, bias))[page].max() == pytest.approx(exercise.TANH_GAP_MAX, rel=0.05)
    assert r.first_bad.given["x"] == x[r.first_bad.row, r.first_bad.col] and "x + bias = " in r.message


def test_inputs_put_most_values_where_tanh_is_far(inputs):
    x, bias = inputs
    v = np.abs(x.astype(np.float64) + bias)
    assert ((v >= 1) & (v <= 4)).mean() > 0.6


def test_nan_and_inf_are_bad_and_reported(inputs):
    x, bias = inputs
    ref = bias_gelu(x, bias)
    got = ref.astype(np.float32)
    got[3, 5] = np.nan
    got[7, 1] = np.inf
    r = compare(got, ref, BIAS_GELU)
    assert (r.bad, r.not_finite, r.first_bad.row, r.first_bad.col) == (2, 2, 3, 5)
    assert math.isfinite(r.max_abs_error)
    assert "2 NaN or inf where a number was expected" in r.message
    assert '"NaN"' in r.model_dump_json()


def test_bias_index_bug_fails(inputs):
    x, bias = inputs
    rows, cols = x.shape
    idx = np.arange(x.size) % rows
    got = gelu_erf(x.ravel().astype(np.float64) + bias[idx % cols]).reshape(x.shape).astype(np.float32)
    assert not compare(got, bias_gelu(x, bias), BIAS_GELU).passed


def test_a_misaligned_fault_at_a_ragged_shape_says_why_and_keeps_the_fault():
    from grader.check.verify import _fault
    from grader.core.errors import Stage, SubmissionError
    from grader.exercises import get

    ex = get("bias_gelu")
    err = SubmissionError(Stage.RUN, "the kernel faulted", "", "CUDA_ERROR_MISALIGNED_ADDRESS")
    named = _fault(err, ex, ex.problem((101, 97)), None)
    assert named is not err and err.details == ""  # the caught error is left as it was
    assert named.stage == Stage.RUN and named.fault == err.fault and str(named) == "the kernel faulted"
    assert "388 bytes, not a multiple of 16" in named.details
    assert _fault(err, ex, ex.problem((101, 96)), None) is err  # aligned rows: the fault as it is
