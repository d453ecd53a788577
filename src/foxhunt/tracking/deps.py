"""The optional packages behind each logger, checked before training starts."""

from __future__ import annotations

import importlib
from collections.abc import Iterable

from foxhunt.errors import ConfigError

#: logger -> (module imported, package to install)
REQUIREMENTS = {
    "tensorboard": [("torch.utils.tensorboard", "tensorboard")],
    "mlflow": [("mlflow", "mlflow-skinny")],
}
#: an MLflow database store (the default SQLite one too) needs what mlflow-skinny leaves out
DATABASE = [("sqlalchemy", "sqlalchemy"), ("alembic", "alembic")]
DATABASE_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql")


def needs_database(uri: str | None) -> bool:
    return uri is None or uri.split(":", 1)[0].split("+", 1)[0] in DATABASE_SCHEMES


def check_installed(loggers: Iterable[str], tracking_uri: str | None = None) -> None:
    """ConfigError (exit 2), one line saying what to install, for a logger whose packages
    cannot be imported. Imports them: only when a logger is asked for."""
    for name in loggers:
        wanted = REQUIREMENTS[name]
        if name == "mlflow" and needs_database(tracking_uri):
            wanted = wanted + DATABASE
        for module, package in wanted:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise ConfigError(
                    f"--logger {name} needs the {package} package ({exc}); install it with "
                    f"pip install 'foxhunt[tracking]' (or pip install {package})"
                ) from None
