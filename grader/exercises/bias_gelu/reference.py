"""Stage 4a, reference: float64 references in numpy and the grader's input generator.

Formulas:
- exact GELU: GELU(v) = 0.5 v (1 + erf(v / sqrt 2)), PyTorch's approximate='none'
  (https://docs.pytorch.org/docs/stable/generated/torch.nn.GELU.html).
- tanh GELU: 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))), approximate='tanh', the form GPT-2 shipped
  (Hendrycks and Gimpel, arXiv:1606.08415).
"""

from __future__ import annotations

import math

import numpy as np

from grader.check.draws import DrawMix, draw
from grader.exercises import bias_gelu as exercise

X_MIX = DrawMix(half_range=exercise.INPUT_X_RANGE[1], **exercise.X_DRAW_SHARES)
BIAS_MIX = DrawMix(half_range=exercise.INPUT_BIAS_RANGE[1], **exercise.BIAS_DRAW_SHARES)
"""The exercise's draws of x and bias (grader.exercises.bias_gelu: the ranges and the shares)."""

_erf = np.frompyfunc(math.erf, 1, 1)


def gelu_erf(v: np.ndarray) -> np.ndarray:
    """Exact GELU of any-shape `v`, computed in float64 (math.erf per element); returns float64."""
    v = np.asarray(v, dtype=np.float64)
    return 0.5 * v * (1.0 + _erf(v / math.sqrt(2.0)).astype(np.float64))


def gelu_tanh(v: np.ndarray) -> np.ndarray:
    """tanh-approximation GELU of any-shape `v`, computed in float64; returns float64."""
    v = np.asarray(v, dtype=np.float64)
    return 0.5 * v * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v**3)))


def bias_gelu(x: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """The exercise's reference: GELU_erf(x + bias[col]) in float64 from float32 inputs.

    x: float32 [rows, cols]; bias: float32 [cols]. Returns float64 [rows, cols].
    """
    return gelu_erf(x.astype(np.float64) + bias.astype(np.float64)[None, :])


def draw_inputs(x_seed: int, bias_seed: int, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """The exercise's inputs of one launch: x float32 [rows, cols] (X_MIX) and bias float32 [cols] (BIAS_MIX)."""
    return draw(x_seed, rows * cols, X_MIX).reshape(rows, cols), draw(bias_seed, cols, BIAS_MIX)


def make_inputs(rng: np.random.Generator, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """Fresh inputs of the exercise from two seeds drawn from `rng`: x float32 [rows, cols] and bias float32 [cols]
    from the grader's generator (grader.check.draws: mostly uniform in INPUT_X_RANGE and INPUT_BIAS_RANGE, where the
    tanh GELU is farthest from the exact one, plus heavy tails, signed zeros, subnormals and NaN)."""
    return draw_inputs(int(rng.integers(2**63)), int(rng.integers(2**63)), rows, cols)


def gelu_gap(lo: float = 0.0, hi: float = 8.0, points: int = 800_001) -> tuple[float, float]:
    """Largest |GELU_erf(v) - GELU_tanh(v)| over `points` evenly spaced v in [lo, hi] (float64), and the v
    where it occurs. Over [0, 8] this is 4.7323552e-4 at 2.6989414 (exercise.TANH_GAP_MAX); the gap is
    odd-symmetric in v, so |v| gives both signs."""
    v = np.linspace(lo, hi, points)
    gap = np.abs(gelu_erf(v) - gelu_tanh(v))
    i = int(np.argmax(gap))
    return float(gap[i]), float(v[i])
