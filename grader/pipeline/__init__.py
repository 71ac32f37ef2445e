"""One grading end to end: the pipeline that runs every stage in order for one file (grade.py) and the guard
against a kernel that never ends (watchdog.py). The batch and the command line stand on it."""
