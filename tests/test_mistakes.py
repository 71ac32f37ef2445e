"""A wrong output named (grader.check.mistakes, issue 29): each known mistake's output is matched to it, a right
output to none, unwritten rows, columns and tails by the fill word; odd inputs (huge, +-0, subnormal, NaN) do not
throw it off; verify() says the match at the end of its message (with tests/fake_gpu.py standing in for the GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from fake_gpu import FakeGpu
from grader.check.verify import verify
from grader.compile.nvrtc import compile_kernels
from grader.core.exercise import POISON_WORD  # the word the output is filled with before the launch (-1e30, no NaN)
from grader.exercises import bias_gelu as exercise
from grader.exercises.bias_gelu import mistakes
from grader.exercises.bias_gelu.exercise import EXERCISE as BIAS_GELU
from grader.exercises.bias_gelu.mistakes import MISTAKES, Inputs, match
from grader.exercises.bias_gelu.reference import bias_gelu, gelu_erf, gelu_tanh, make_inputs
from grader.source.read import read_submission


@pytest.fixture(scope="module")
def inputs():
    return make_inputs(np.random.default_rng(7), *exercise.VERIFY_SHAPE)


GPU_NAN = 0x7FFFFFFF
"""The NaN a GPU's float arithmetic gives when an operand is NaN (the PTX ISA's canonical NaN: a bias read past its
end reads the guard's GUARD_WORD, a NaN with another payload, and x + it is this): not the fill word."""


def output_of(name: str, x: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """What a float32 kernel making mistake `name` writes (float64 formula rounded to float32), and GPU_NAN where
    it reads bias past its end."""
    rows, cols = x.shape
    r = np.broadcast_to(np.arange(rows)[:, None], x.shape)
    i = Inputs(x.astype(np.float64), bias.astype(np.float64), r, r * cols + np.arange(cols)[None, :], rows)
    with np.errstate(all="ignore"):
        out, ok = MISTAKES[name][2](i)
    got = out.astype(np.float32)
    got.view(np.uint32)[~ok] = GPU_NAN
    return got


def test_the_inputs_hold_nan_wide_and_page_range_values(inputs):
    x, bias = inputs  # what the tests below rely on: the draws' NaN (their answer is NaN) and heavy tails
    assert np.isnan(x).sum() >= 2 and np.isnan(x[60:]).any() and np.isnan(x[:, 90:]).any() and not np.isnan(bias).any()
    assert 100 < (np.abs(x) > 8).sum() < 0.1 * x.size and (np.abs(x) > 4096).any() and (np.abs(x) < 4).mean() > 0.9


@pytest.mark.parametrize("fill", [None, POISON_WORD])
@pytest.mark.parametrize("name", sorted(set(MISTAKES) - {"bias_flat"}))
def test_each_mistake_is_named_with_how_closely_it_matches(inputs, name, fill):
    x, bias = inputs  # NaN where x is NaN (and GPU_NAN past the end of bias): never taken for the fill
    found = match(x, bias, output_of(name, x, bias), fill)
    assert found is not None and found.name == name, found
    assert found.max_diff < 1e-6 and found.share >= mistakes.MATCH_SHARE
    assert found.text.startswith(f"your output matches {MISTAKES[name][0]} to ")
    assert MISTAKES[name][1] in found.text


def test_a_flat_bias_index_cannot_be_told_apart_on_the_few_elements_inside_bias(inputs):
    x, bias = inputs  # bias[i] is bias[col] on row 0, and past the end of bias everywhere else
    assert match(x, bias, output_of("bias_flat", x, bias), POISON_WORD) is None


def test_the_tanh_form_says_the_exercise_asks_for_erf(inputs):
    x, bias = inputs
    found = match(x, bias, gelu_tanh(x.astype(np.float64) + bias).astype(np.float32))
    assert found.name == "tanh" and f"your output matches GELU_tanh(x + bias) to {found.max_diff:.1e} (" in found.text
    assert 2.0**-26 < found.max_diff <= 2.0**-24  # float32 rounding, relative: up to 0.004 absolute at 65536
    assert "the exercise asks for the exact (erf) GELU" in found.text


def test_a_right_output_matches_no_mistake(inputs):
    x, bias = inputs
    assert match(x, bias, bias_gelu(x, bias).astype(np.float32)) is None
    v = x + bias  # float32 add, as a kernel does
    assert match(x, bias, gelu_erf(v).astype(np.float32)) is None


def fill(got: np.ndarray, where) -> np.ndarray:
    out = got.copy()
    out.view(np.uint32)[where] = POISON_WORD
    return out


@pytest.mark.parametrize("where, said", [
    ((slice(60, None), slice(None)), "41 of 101 rows were never written (rows 60 to 100)"),
    ((slice(None), slice(96, None)), "the last 1 of 97 columns of every row were never written"),
])
def test_rows_or_columns_never_written_are_named(inputs, where, said):
    x, bias = inputs  # NaN inputs among them (test_the_inputs_hold...): unwritten too, they hold the fill
    found = match(x, bias, fill(bias_gelu(x, bias).astype(np.float32), where), POISON_WORD)
    assert found.name == "unwritten" and found.text.startswith(said)
    assert "still hold what the output was filled with before the launch" in found.text
    got = bias_gelu(x, bias).astype(np.float32)
    got[where] = np.nan  # without a fill word any NaN is unwritten, and a NaN input's NaN fits either way
    assert match(x, bias, got).text.startswith(said)


def test_unwritten_columns_that_are_not_the_last_are_not_called_the_last(inputs):
    x, bias = inputs
    got = fill(bias_gelu(x, bias).astype(np.float32), (slice(None), [10, 96]))
    assert match(x, bias, got, POISON_WORD) is None
    got = fill(bias_gelu(x, bias).astype(np.float32), (slice(None), [95, 96]))
    assert match(x, bias, got, POISON_WORD).text.startswith("the last 2 of 97 columns of every row")


def test_a_tail_never_written_and_the_rest_named_too(inputs):
    x, bias = inputs
    got = gelu_tanh(x.astype(np.float64) + bias).astype(np.float32)
    got.reshape(-1).view(np.uint32)[-50:] = POISON_WORD
    found = match(x, bias, got, POISON_WORD)
    assert found.text.startswith("the last 50 of 9797 elements were never written")
    assert "the rest matches GELU_tanh(x + bias) to" in found.text


def test_nan_read_past_the_end_of_bias_is_not_called_unwritten(inputs):
    x, bias = inputs  # bias[row] for rows 97 to 100 reads the guard: whole rows of NaN, as unwritten rows would be
    got = output_of("bias_row", x, bias)
    assert (got[97:].view(np.uint32) == GPU_NAN).all() and not np.isnan(got[:97][~np.isnan(x[:97])]).any()
    assert match(x, bias, got, POISON_WORD).name == "bias_row"
    assert match(x, bias, got).name == "bias_row"  # no fill word: NaN only where bias_row reads past bias


def test_the_fill_is_unwritten_even_where_the_mistake_reads_past_the_end_of_bias(inputs):
    x, bias = inputs  # no kernel computes the fill from the guard's NaN: rows 97 to 100 were never written
    got = output_of("bias_row", x, bias)
    got.view(np.uint32)[97:] = POISON_WORD
    found = match(x, bias, got, POISON_WORD)
    assert found.text.startswith("4 of 101 rows were never written (rows 97 to 100)")
    assert "the rest matches GELU(x + bias[row])" in found.text


def test_odd_inputs_do_not_throw_the_match_off(inputs):
    x, bias = inputs
    x = x.copy()
    x[0, :10] = 3e38
    x[1, :5] = np.nan
    x[2, :4] = [0.0, -0.0, 1e-42, -3e38]
    bias = bias.copy()
    bias[3] = np.nan
    with np.errstate(all="ignore"):
        got = gelu_tanh(x.astype(np.float64) + bias).astype(np.float32)
    found = match(x, bias, got, POISON_WORD)
    assert found is not None and found.name == "tanh"


def test_inputs_of_huge_magnitude_alone_tell_no_mistake_apart():
    x, bias = make_inputs(np.random.default_rng(3), 64, 64)
    x = np.where(np.abs(x) >= 1, x, 4) * np.float32(1e30)  # GELU(v) is v or 0 there, the tanh form too
    with np.errstate(all="ignore"):
        got = gelu_tanh(x.astype(np.float64) + bias).astype(np.float32)
    assert match(x, bias, got) is None


@pytest.fixture(scope="module")
def mostly_huge():
    """The draws' x scaled by 1e30: all but its zeros and subnormals (there v is about bias) huge, where the
    sigmoid and tanh forms give what the exact GELU gives; fewer than 1 - MATCH_SHARE of v tell them apart."""
    x, bias = make_inputs(np.random.default_rng(3), 64, 64)
    x = x * np.float32(1e30)
    small = np.abs(x.astype(np.float64) + bias) < 12
    assert mistakes.MIN_TELLING < small.sum() < (1 - mistakes.MATCH_SHARE) * x.size
    return x, bias


def test_a_right_output_on_mostly_huge_inputs_is_not_the_sigmoid_form(mostly_huge):
    x, bias = mostly_huge  # it agrees with the sigmoid form on 99% of the elements, but on none of those that tell
    assert match(x, bias, bias_gelu(x, bias).astype(np.float32)) is None


def test_the_sigmoid_form_on_mostly_huge_inputs_is_named_by_the_few_elements_that_tell(mostly_huge):
    x, bias = mostly_huge
    assert match(x, bias, output_of("sigmoid", x, bias)).name == "sigmoid"


def test_shapes_that_do_not_fit_are_refused():
    with pytest.raises(ValueError, match="do not fit"):
        match(np.zeros((2, 3), np.float32), np.zeros(2, np.float32), np.zeros((2, 3), np.float32))


def test_a_large_output_is_compared_on_evenly_spaced_rows():
    x, bias = make_inputs(np.random.default_rng(5), 65535, 5)
    found = match(x, bias, gelu_tanh(x.astype(np.float64) + bias).astype(np.float32))
    assert found.name == "tanh" and found.compared <= mistakes.MAX_COMPARED


class MistakenGpu(FakeGpu):
    """The stand-in GPU, whose biasGeluFused computes the tanh form over the whole row grid."""

    def _k_biasGeluFused(self, k, grid, block, x, bias, out, cols):
        rows = grid[1]
        xv = self.arr(x, rows * cols, np.float32).reshape(rows, cols).astype(np.float64)
        b = self.arr(bias, cols, np.float32).astype(np.float64)
        self.arr(out, rows * cols, np.float32)[:] = gelu_tanh(xv + b).astype(np.float32).reshape(-1)


def test_verify_names_the_mistake_at_the_end_of_its_message():
    sub = read_submission("tests/data/causes/tanh_form.cu", BIAS_GELU)
    compiled = compile_kernels(sub.compile_text, sub.name, (exercise.KERNEL_NAME,), "sm_90")
    gpu = MistakenGpu()
    kernel = gpu.load(compiled)[exercise.KERNEL_NAME]
    spec = sub.contract.launch_spec(tuple(p.size for p in compiled.kernels[exercise.KERNEL_NAME].params))
    v = verify(gpu, kernel, spec, sub.contract, BIAS_GELU, BIAS_GELU.problem(exercise.VERIFY_SHAPE),
               np.random.default_rng(1))
    assert not v.passed and v.mistake is not None and v.mistake.name == "tanh"
    assert v.message.startswith("wrong output at 101 x 97") and "; your output matches GELU_tanh(x + bias)" in v.message


def test_a_fill_word_that_reads_as_a_number_is_still_unwritten(inputs):
    x, bias = inputs  # the poison need not be a NaN: compared by its bits, never as a value
    word = 0x7F7FFFFF  # the largest float32, a number
    got = bias_gelu(x, bias).astype(np.float32)
    got.view(np.uint32)[:, 90:] = word
    found = match(x, bias, got, word)
    assert found.name == "unwritten" and found.text.startswith("the last 7 of 97 columns of every row")
    got = gelu_tanh(x.astype(np.float64) + bias).astype(np.float32)
    got.view(np.uint32)[100] = word
    found = match(x, bias, got, word)
    assert found.text.startswith("1 of 101 rows were never written (row 100)") and "GELU_tanh" in found.text
