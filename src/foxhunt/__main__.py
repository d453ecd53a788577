"""`python -m foxhunt` (and `torchrun -m foxhunt`) run the CLI."""

from foxhunt.cli import entry

entry()
