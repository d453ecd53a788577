"""Where the loggers write, checked before training starts: a TensorBoard folder never inside
another run, an MLflow database never in a folder MLflow would create (it made
/nonexistent at the filesystem root), and a tracking server that answers (one that did not
hung the run for minutes of MLflow's retries).
"""

from __future__ import annotations

import http.client
import os
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urlsplit

from foxhunt.errors import ConfigError
from foxhunt.runs import TENSORBOARD_DIR, check_output_path, holds_run
from foxhunt.runs.files import PROTECTED_ENTRIES
from foxhunt.runs.folder import enclosing_run
from foxhunt.tracking.config import TrackingConfig

#: seconds the first request to a tracking server may take before the run is refused
PROBE_TIMEOUT_S = 10.0
#: every later MLflow HTTP call: one retry, each at most this long (MLflow's defaults, seven
#: retries with backoff of 120 s calls, waited minutes); a variable the user set wins
HTTP_LIMITS = {
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
}


def check_tracking_places(config: TrackingConfig, run_dir: Path) -> None:
    """ConfigError (exit 2) for a --tracking-dir or --tracking-uri that cannot be used."""
    if "tensorboard" in config.active and config.tracking_dir:
        check_tracking_dir(Path(config.tracking_dir), run_dir)
    if "mlflow" in config.active and config.tracking_uri:
        check_tracking_uri(config.tracking_uri)


def check_tracking_dir(folder: Path, run_dir: Path) -> None:
    flag = f"--tracking-dir {folder}"
    check_output_path(folder, "--tracking-dir")
    if folder.is_dir() and holds_run(folder):
        raise ConfigError(f"{flag} holds a run; event files go in a folder of their own")
    target, here = Path(os.path.abspath(folder)), Path(os.path.abspath(run_dir))
    if here in target.parents:  # inside this run: not in its checkpoints/, report/, exports
        entry = target.relative_to(here).parts[0]
        if entry in PROTECTED_ENTRIES and entry != TENSORBOARD_DIR:
            raise ConfigError(f"{flag} is inside the run's {entry}; choose another folder")
        return
    outer = enclosing_run(folder)
    if outer is not None:
        raise ConfigError(
            f"{flag} is inside the run folder {outer}; write the event files outside it"
        )


def check_tracking_uri(uri: str) -> None:
    scheme = uri.split(":", 1)[0].split("+", 1)[0].lower() if "://" in uri else "file"
    if scheme in ("http", "https"):
        probe(uri)
    elif scheme == "sqlite":
        database = uri.split("://", 1)[1].removeprefix("/")  # sqlite:///rel, sqlite:////abs
        if database and database != ":memory:":
            check_folder_exists(Path(unquote(database.split("?", 1)[0])).parent, uri)
    elif scheme == "file":
        store = Path(unquote(urlsplit(uri).path)) if uri.startswith("file:") else Path(uri)
        check_output_path(store, "--tracking-uri")
        check_folder_exists(store.parent, uri)


def check_folder_exists(folder: Path, uri: str) -> None:
    if not folder.is_dir():
        raise ConfigError(
            f"--tracking-uri {uri}: the folder {folder} does not exist; create it first (MLflow "
            "would create it, wherever it is)"
        )


def probe(uri: str) -> None:
    """One request to the server, bounded; any HTTP answer will do (MLflow's own calls then
    say what is wrong): only silence and refusal are refused here. Through urllib, so that
    the proxy variables MLflow's requests honour apply; the certificate is MLflow's to check
    (a private CA or MLFLOW_TRACKING_INSECURE_TLS must not fail the probe)."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    url = uri.rstrip("/") + "/health"
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT_S, context=context) as answer:
            answer.read(1024)
    except urllib.error.HTTPError:
        pass  # 404, 401, 500: the server answered
    except (OSError, http.client.HTTPException, ValueError) as exc:
        what = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
        raise ConfigError(
            f"--tracking-uri {uri}: the tracking server does not answer ({what}); start it, "
            "or fix the URI"
        ) from None
    for name, value in HTTP_LIMITS.items():
        os.environ.setdefault(name, value)
