"""Stage 4, check: is the submission correct? The float64 references and the input generator (reference), and the
guarded run at a ragged shape compared with them, before anything is timed (verify)."""
