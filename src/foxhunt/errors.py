"""User-facing errors: bad input ends with one clear line and exit code 2, never a traceback."""


class FoxhuntError(Exception):
    """An error caused by the user's input or environment.

    The message names the file, column or field at fault and says what to do; the CLI prints
    it on one line to stderr and exits with `exit_code`.
    """

    exit_code: int = 2
    leave_at_once: bool = False
    """The process cannot clean up (a distributed peer was lost): the CLI exits as soon as it
    has printed the message (foxhunt.process_exit)."""


class DataError(FoxhuntError, ValueError):
    """The bars file is missing, unreadable or invalid."""


class ConfigError(FoxhuntError, ValueError):
    """A configuration value is out of range or inconsistent."""


class UsageError(FoxhuntError):
    """A command line argparse refused (unknown flag, bad number)."""
