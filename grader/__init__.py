"""Auto-grader for the course exercise `biasGeluFused` (out = GELU_erf(x + bias[col])).

Stages, one module each, data flowing one way: source -> compile -> device -> reference/verify -> timing
-> grade -> report (and batch for a class). The exercise's constants live in grader.exercise.
"""

__version__ = "0.1.0"
