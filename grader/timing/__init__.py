"""Stage 5, timing: the copy floor, the benchmark shape and event timing of alternating launches (timer), a quiet GPU
before a verdict is given (contention), the submission timed beside the floor (measure), and the exercise's chain, shown
and never graded (chain)."""
