"""Exports of a trained run for serving: each reads the run through ``foxhunt.runs`` and
builds the model through the model factory and ``foxhunt.transforms``. A layer above the run
folder, the transforms and ``quant`` (whose int8 kernels and QAT transforms it uses); nothing
below imports it. ``int8.py``: the int8 export of a QAT or FP32 run (docs/QAT_GUIDE.md);
``onnx.py``: the FP32 ONNX export (its trace ``onnx_trace.py``, its
onnx_export.json ``onnx_spec.py``); ``onnx_runtime.py``: an ONNX export folder's loader
under ONNX Runtime; ``onnx_int8.py``: the export's int8 QDQ form (docs/export.md)."""
