"""`python -m grader ...` is the `grade` command (for an environment whose scripts folder is not on PATH)."""

import sys

from grader.cli import main

sys.exit(main())
