"""Int8 exports of a run folder.

A QAT run folder is an ordinary run folder plus ``qat.json`` (its :class:`QATConfig`); its
``model.safetensors`` holds the fake-quant model's state (weights, frozen scales), which
``foxhunt.trained_run.load_trained_run`` loads into a freshly prepared model. ``export_run``
turns a run into an int8 folder that ``foxhunt predict`` / ``foxhunt evaluate`` take in
place of the run folder (``foxhunt.serving.load_run`` tells them apart). Files are named and
read through ``foxhunt.runs``, which imports nothing from here:

    EXPORT_DIR/
      config.json              the run's config (data, model, training)
      preprocessor.json        the run's fitted preprocessing
      baseline.json            the run's historical baseline (for evaluate)
      quantization.json        mode ("qat" | "dynamic"), QAT config, activation grid, what
                               is int8
      model_int8.safetensors   int8 weights, float32 scales and the float parameters, packed
                               by dtype (no pickle; see foxhunt.quant.serialize)

Loading rebuilds the model from ``config.json``, applies the same transform
(``int8_structure``), loads the tensors into it, dequantizes the int8 weights that compute
in float32 (``dequantize_stored``) and swaps foxhunt's int8 kernel in for the reference int8
Linear layers (``quant/kernel.py``). Format 2: torch.ao-free; format 1 (torch.ao's packed
layers) is refused with the command that re-exports the run.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save as save_safetensors
from torch import nn

from foxhunt.errors import FoxhuntError
from foxhunt.model.factory import build_model
from foxhunt.model.size import check_fits_in_memory
from foxhunt.quant.config import LSTM_MODES
from foxhunt.quant.kernel import accelerate
from foxhunt.quant.linear import DYNAMIC_MAX
from foxhunt.quant.serialize import int8_tensors, layout_digest, load_int8_tensors, pack, unpack
from foxhunt.quant.transform import (
    MODES,
    convert,
    int8_structure,
    plan,
    quantize_dynamic,
)
from foxhunt.quant.weights import dequantize_stored
from foxhunt.runs import (
    BASELINE_FILE,
    CONFIG_FILE,
    EXPORT_FILE,
    INT8_WEIGHTS_FILE,
    PREPROCESSOR_FILE,
    LoadedRun,
    is_export,
    read_json,
    read_run_config,
    read_run_preprocessor,
    versions,
    weights_bytes,
)
from foxhunt.storage import atomic_write_bytes, atomic_write_json
from foxhunt.trained_run import load_trained_run, read_qat_config
from foxhunt.transforms import apply_model_transforms

log = logging.getLogger(__name__)

FORMAT = 2


def export_run(run_dir: Path, output: Path, *, mode: str) -> dict[str, Any]:
    """Write the int8 export of ``run_dir`` to ``output``; returns its quantization.json.

    mode "qat": convert a QAT run (``foxhunt train --qat``) with its frozen scales;
    mode "dynamic": post-training dynamic quantization of an FP32 run.
    """
    run_dir, output = Path(run_dir), Path(output)
    if mode not in MODES:
        raise FoxhuntError(f"export mode {mode!r}: use one of {MODES}")
    if is_export(run_dir):
        raise FoxhuntError(f"{run_dir} is already an int8 export; pass the run folder")
    qat = read_qat_config(run_dir)
    if mode == "qat" and qat is None:
        raise FoxhuntError(
            f"{run_dir} was trained without --qat: export it with --dynamic (post-training "
            "quantization) or train it again with --qat"
        )
    if mode == "dynamic" and qat is not None:
        raise FoxhuntError(f"{run_dir} is a QAT run: export it with --int8")
    if output.resolve() == run_dir.resolve():
        raise FoxhuntError("--output must differ from the run folder")
    loaded = load_trained_run(run_dir)
    # what an FP32 run would save
    float_model = build_model(loaded.config.model_class, loaded.config.model)
    lstm = qat.lstm if qat else LSTM_MODES[0]
    layers = plan(float_model, lstm=lstm)
    model = convert(loaded.model) if mode == "qat" else quantize_dynamic(loaded.model, lstm=lstm)
    output.mkdir(parents=True, exist_ok=True)
    tensors = int8_tensors(model)
    metadata = {"format": f"foxhunt-int8/{FORMAT}", "layout": layout_digest(tensors)}
    blob = save_safetensors(pack(tensors), metadata=metadata)
    atomic_write_bytes(output / INT8_WEIGHTS_FILE, blob)
    for name in (CONFIG_FILE, PREPROCESSOR_FILE, BASELINE_FILE):
        if (run_dir / name).is_file():
            atomic_write_bytes(output / name, (run_dir / name).read_bytes())
    spec = {
        "format": FORMAT,
        "mode": mode,
        "qat": qat.to_dict() if qat else None,
        "lstm": lstm,
        "activation_max": qat.activation_max if qat else DYNAMIC_MAX,  # dynamic: 7-bit inputs
        "source": str(run_dir),
        "bytes": {
            "fp32": len(weights_bytes(float_model)),
            "int8": (output / INT8_WEIGHTS_FILE).stat().st_size,
        },
        "layers": layers.to_dict(),
        "versions": versions(),
    }
    atomic_write_json(output / EXPORT_FILE, spec)
    return spec


def load_export(
    folder: Path, *, device: str | torch.device = "cpu", kernel: bool = True
) -> LoadedRun:
    """Rebuild the int8 model of an export folder (CPU only: the int8 kernels are).

    ``kernel``: compute the int8 Linear layers with foxhunt's kernel (``quant/kernel.py``)
    where it builds; False keeps the reference layers (the same values in float32, slower).
    """
    folder = Path(folder)
    if torch.device(device).type != "cpu":
        raise FoxhuntError(f"{folder} is an int8 export: it runs on the CPU only")
    spec = read_json(folder / EXPORT_FILE)
    if isinstance(spec, dict) and spec.get("format") == 1:
        source = spec.get("source") or "RUN_DIR"
        raise FoxhuntError(
            f"{folder} is an int8 export of an older foxhunt (torch.ao's int8 layers, format 1); "
            f"export the run again: foxhunt export --int8 {source} --output {folder}"
        )
    if not isinstance(spec, dict) or spec.get("format") != FORMAT or spec.get("mode") not in MODES:
        raise FoxhuntError(f"{folder / EXPORT_FILE}: unknown export format; re-export the run")
    config = read_run_config(folder)  # checked as a run's: sections, fields, size in RAM
    check_fits_in_memory(
        config.model, per_parameter=4, what="loading the model", model_class=config.model_class
    )
    model = apply_model_transforms(build_model(config.model_class, config.model), config.model)
    path = folder / INT8_WEIGHTS_FILE
    if not path.is_file():
        raise FoxhuntError(f"{path} not found: the export did not finish")
    _load_tensors(model, spec, path)
    dequantize_stored(model)  # int8 in the file; these weights compute in float32
    fused = accelerate(model) if kernel else 0
    if fused:
        log.info("%s: foxhunt's int8 kernel computes %d layers and gates", folder, fused)
    elif kernel:  # asked for, but off (FOXHUNT_FUSED_KERNEL=0), not built, or no AVX2 here
        log.warning(
            "%s: the reference int8 layers (float32 math on the int8 grids) compute this "
            "export, because foxhunt's int8 kernel is off, did not build, or this CPU lacks "
            "AVX2: the same forecasts, slower than FP32 (docs/QAT_GUIDE.md); serve the FP32 "
            "run or the ONNX export if latency matters",
            folder,
        )
    preprocessor = read_run_preprocessor(folder, config)
    return LoadedRun(config=config, model=model.eval(), preprocessor=preprocessor)


def _load_tensors(model: nn.Module, spec: dict[str, Any], path: Path) -> None:
    lstm, activation_max = spec.get("lstm"), spec.get("activation_max")
    if lstm not in LSTM_MODES or activation_max not in (127, 255):
        raise FoxhuntError(f"{path.with_name(EXPORT_FILE)}: bad lstm or activation_max")
    int8_structure(model, mode=spec["mode"], lstm=lstm, activation_max=activation_max)
    try:
        with safe_open(path, framework="pt") as f:
            metadata, blobs = f.metadata() or {}, {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
        like = int8_tensors(model)
        if metadata.get("layout") != layout_digest(like):
            raise ValueError("its layout differs from the model that config.json builds")
        load_int8_tensors(model, unpack(blobs, like))
    except (SafetensorError, KeyError, ValueError, RuntimeError) as exc:
        raise FoxhuntError(f"{path} is damaged or does not match {CONFIG_FILE} ({exc})") from exc
