"""Feedback beside the grade: what the compiled code says (sass, hints), what Nsight Compute measured (counters, and the
profiled child it runs), and the hints ranked by what fixing each is worth (worth). Never part of the verdict."""
