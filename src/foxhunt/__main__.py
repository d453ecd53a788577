"""`python -m foxhunt` (and `torchrun -m foxhunt`) run the CLI."""

import sys

from foxhunt.cli import main

sys.exit(main())
