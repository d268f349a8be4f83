"""`python -m timerepro` is the `timerepro` command."""

import sys

from timerepro.cli import main

sys.exit(main())
