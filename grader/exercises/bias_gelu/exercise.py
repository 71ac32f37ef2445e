"""The course page's exercise as the harness takes it: `BiasGelu`, an grader.core.exercise.Exercise.

biasGeluFused(const float* x, const float* bias, float* out, size_t cols): out[r, c] = GELU_erf(x[r, c] +
bias[c]), float32, row-major [rows, cols]. The constants are this package's (grader/exercises/bias_gelu/__init__.py),
the float64 reference and the draws reference.py's, the known mistakes mistakes.py's, the on-GPU inputs and check
device.py's, the part-3 chain chain.py's, the tanh GELU hint hints.py's.
"""

from __future__ import annotations

import numpy as np

from grader.core import exercise as course
from grader.core.exercise import CounterTexts, Exercise, Pointer, Problem
from grader.exercises import bias_gelu as c


class BiasGelu(Exercise):
    """biasGeluFused, the course page's exercise (the default of `grade`)."""

    name = "bias_gelu"
    kernel_name = c.KERNEL_NAME
    title = "out = GELU_erf(x + bias[col])"
    pointers = (Pointer("x", "const float*", about="the input x [rows, cols]"),
                Pointer("bias", "const float*", about="the bias [cols]", cached=True),
                Pointer("out", "float*", output=True, about="the output [rows, cols]"))
    integer_roles = ("rows", "cols", "n")
    default_params = c.DEFAULT_PARAMS
    default_grid = c.DEFAULT_GRID
    default_elems_per_thread = c.DEFAULT_ELEMS_PER_THREAD
    verify_dims = (c.VERIFY_SHAPE, *c.EXTRA_SHAPES)
    floats_per_element = c.FLOATS_PER_ELEMENT
    atol, rtol = c.ATOL, c.RTOL
    tolerance_text = f"|got - ref| <= {c.ATOL:g} + {c.RTOL:g} * |ref|, NaN where ref is NaN"
    slow_hint = ("correct but slow, and neither the machine code, the launch, the grading's copies nor the counters "
                 "(where measured) name the cause. What a kernel at the copy floor does, by the page's Check: it reads "
                 "x once and writes out once, 16 bytes per access, with the column from blockIdx.x and threadIdx.x "
                 "(no division per element)")
    bounds_test = "`if (col < cols)` (or `i < n`)"
    wrong_output_kinds = ("tanh",)
    asks_for_row = True
    bytes_text = "x read once, out written once"
    cached_text = "bias: one cols-float vector read by every row from cache"
    counter_texts = CounterTexts(
        reread="x is read more than once, or loads use only part of each 32-byte sector they fetch (strided or "
               "misaligned access), or the bias is fetched from DRAM per element (an index that defeats the cache)",
        loads="x and a bias entry need 0.250",
        fp64="the kernel computes in double. x, bias and out are float, and 0.5f * v * (1.0f + erff(v * "
             "0.70710678f)) is the exact GELU in float; double math runs on the FP64 pipe, at a fraction of the float "
             "rate, with a conversion each way.",
        xu="a math function costlier than erff (normcdff, expf, powf, a float division), conversions, or an integer "
           "division by a run-time value. The exact GELU in float is 0.5f * v * (1.0f + erff(v * 0.70710678f)).",
        scatter_fix="Map threadIdx.x to the column (the page's row grid: blockIdx.y = row, the column from "
                    "blockIdx.x and threadIdx.x), so that a warp reads and writes one contiguous piece of a row.")
    reference_names = (c.KERNEL_NAME,)

    def check_params(self, params: tuple[str, ...], grid: str) -> str:
        """Why `params` cannot launch biasGeluFused on a `grid` grid ('' when they can)."""
        missing = [p.name for p in self.pointers if p.name not in params]
        if missing:
            return f"params must include x, bias and out; missing {', '.join(missing)}"
        if "cols" not in params:
            return "params must include cols: the kernel needs it to find bias[col]"
        if grid != "row" and not {"rows", "n"} & set(params):
            return f"a {grid} grid needs rows or n in params to know where the data ends"
        return ""

    def problem(self, dims: tuple[int, ...]) -> Problem:
        """rows x cols: x and out of rows x cols floats, bias of cols; integers rows, cols, n = rows x cols."""
        rows, cols = dims
        return Problem(dims=(rows, cols), label=f"{rows} x {cols}", rows=rows, cols=cols, grid=(rows, cols),
                       integers={"rows": rows, "cols": cols, "n": rows * cols},
                       floats={"x": rows * cols, "bias": cols, "out": rows * cols})

    def cached_bytes(self, problem: Problem) -> int:
        """The bias: cols floats."""
        return problem.cols * course.BYTES_PER_FLOAT

    def bench_problem(self, free_bytes: int, l2_bytes: int) -> Problem:
        """The benchmark's rows x cols (grader.timing.timer.bench_rows_cols: each buffer >= BENCH_L2_MULTIPLE x L2,
        rows <= 65535, cols a multiple of 1024). Raises GraderFault when the card is too small."""
        from grader.timing.timer import bench_rows_cols

        return self.problem(bench_rows_cols(free_bytes, l2_bytes, course.BENCH_BUFFERS))

    def draw(self, seeds: tuple[int, ...], problem: Problem) -> dict[str, np.ndarray]:
        """x float32 [rows, cols] and bias float32 [cols] of the draws with `seeds` (reference.draw_inputs)."""
        from grader.exercises.bias_gelu.reference import draw_inputs

        x, bias = draw_inputs(seeds[0], seeds[1], problem.rows, problem.cols)
        return {"x": x, "bias": bias}

    def reference(self, inputs: dict[str, np.ndarray], problem: Problem) -> np.ndarray:
        """GELU_erf(x + bias[col]) in float64 [rows, cols] (reference.bias_gelu)."""
        from grader.exercises.bias_gelu.reference import bias_gelu

        return bias_gelu(inputs["x"], inputs["bias"])

    def given(self, inputs: dict[str, np.ndarray], problem: Problem, row: int, col: int) -> dict[str, float]:
        """x[row, col] and bias[col]."""
        return {"x": float(inputs["x"][row, col]), "bias": float(inputs["bias"][col])}

    def given_text(self, given: dict[str, float]) -> str:
        """'x + bias = v', the sum as the kernel computes it (float32)."""
        return f"x + bias = {np.float32(given['x']) + np.float32(given['bias']):.9g}"

    def where(self, role: str, index: int, problem: Problem) -> str:
        """'col c' in bias, 'row r, col c' in x and out."""
        return f"col {index}" if role == "bias" else f"row {index // problem.cols}, col {index % problem.cols}"

    def mistake(self, inputs: dict[str, np.ndarray], got: np.ndarray, problem: Problem):
        """The known mistake `got` matches (grader.exercises.bias_gelu.mistakes.match), or None."""
        from grader.exercises.bias_gelu.mistakes import match

        return match(inputs["x"], inputs["bias"], got, self.poison_word)

    def device(self, gpu, problem: Problem):
        """x, bias and out at `problem` on the GPU, drawn there and checked by checkBiasGelu (device.py)."""
        from grader.exercises.bias_gelu.device import BiasGeluDevice

        return BiasGeluDevice(gpu, problem, self)

    def hint_texts(self) -> dict[str, str]:
        """The page's words for the division and 4-byte-load hints (hints.HINT_TEXTS: the bias index, the row
        grid, float4 rows)."""
        from grader.exercises.bias_gelu.hints import HINT_TEXTS

        return dict(HINT_TEXTS)

    def code_hints(self, signs) -> list:
        """The tanh GELU hint where the kernel's code shows a tanh (hints.tanh_hints)."""
        from grader.exercises.bias_gelu.hints import tanh_hints

        return tanh_hints(signs)

    def references(self, gpu, problem: Problem, buffers: dict[str, object]) -> dict[str, object]:
        """The model answer biasGeluFused<4> (a row grid, one float4 per thread) and the page's answer
        biasGeluFused<1> (one float per thread), templates of chain.cu (page_kernels), on `buffers`."""
        from grader.core.launch import bind
        from grader.exercises.bias_gelu.page_kernels import PAGE, WIDE, chain_kernels, load_chain

        defs = {"model": chain_kernels(WIDE)[c.KERNEL_NAME], "page": chain_kernels(PAGE)[c.KERNEL_NAME]}
        loaded = load_chain(gpu, list(defs.values()))
        values = {"x": buffers["x"], "bias": buffers["bias"], "out": buffers["out"], "cols": problem.cols}
        return {label: bind(gpu, loaded[d.expr], d.spec, problem.rows, problem.cols, values)
                for label, d in defs.items()}

    def chain(self, gpu, kernel, spec, launch_values, rng):
        """The page's part-3 table with the submission in it (chain.chain_table)."""
        from grader.exercises.bias_gelu.chain import chain_table

        return chain_table(gpu, kernel, spec, lambda ptrs, rows, cols: launch_values(ptrs, self.problem((rows, cols))),
                           self, rng=rng)


EXERCISE = BiasGelu()
