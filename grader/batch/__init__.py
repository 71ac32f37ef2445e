"""A class: `grade batch` and `grade merge` (command), the worker process that grades one submission and the pool that
runs them (worker, pool, and the messages between them), the gradebook built from the rows, the class page, and
every file they write, in one table with one writer (outputs)."""
