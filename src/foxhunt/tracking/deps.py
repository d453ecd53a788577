"""The optional packages behind each logger, checked before training starts."""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from foxhunt.errors import ConfigError

#: logger -> (module imported, package to install)
REQUIREMENTS = {
    "tensorboard": ("torch.utils.tensorboard", "tensorboard"),
    "mlflow": ("mlflow", "mlflow-skinny"),
}


def check_installed(loggers: Iterable[str]) -> None:
    """ConfigError (exit 2), one line saying what to install, for a logger whose package
    cannot be imported. Imports them: only when a logger is asked for."""
    for name in loggers:
        module, package = REQUIREMENTS[name]
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ConfigError(
                f"--logger {name} needs the {package} package ({exc}); install it with "
                f"pip install 'foxhunt[tracking]' (or pip install {package})"
            ) from None
