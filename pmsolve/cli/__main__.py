"""``python -m pmsolve.cli``: the same as the ``pmsolve`` console script."""

import sys

from pmsolve.cli import main

sys.exit(main())
