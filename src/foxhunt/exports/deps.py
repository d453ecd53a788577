"""The packages of the `onnx` extra, checked before an ONNX export or an ONNX export folder
is used: a missing one was an internal error (ModuleNotFoundError) after the run was loaded."""

from __future__ import annotations

import importlib

from foxhunt.errors import ConfigError

#: module imported -> package to install (pyproject's `onnx` extra)
ONNX_PACKAGES = {"onnx": "onnx", "onnxscript": "onnxscript", "onnxruntime": "onnxruntime"}


def require_onnx(door: str, modules: tuple[str, ...] = tuple(ONNX_PACKAGES)) -> None:
    """ConfigError (exit 2), one line naming what to install, for a module that cannot be
    imported; `door` says what needs it ("foxhunt export --onnx")."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            package = ONNX_PACKAGES[module]
            raise ConfigError(
                f"{door} needs the {package} package ({exc}); install it with "
                f"pip install 'foxhunt[onnx]' (or pip install {package})"
            ) from None
