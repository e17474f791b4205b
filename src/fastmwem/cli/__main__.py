"""``python -m fastmwem.cli``: the same as the ``fastmwem`` command."""

import sys

from fastmwem.cli import main

sys.exit(main())
