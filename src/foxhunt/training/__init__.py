"""Training a built model: the loop, its steps and the state it resumes from.

Imports nothing itself: import the module you need (``foxhunt.training.trainer``), so that
reading one piece (the run folder reads ``training.config``) never loads the whole loop.

- ``trainer.py``: the ``Trainer``, the loop of named steps (``train_step``, ``evaluate``)
  over ``train_state.py`` (where training stands), ``update.py`` (AdamW, the fp16 scaler,
  clipping), ``accumulation.py`` (micro-batches), ``schedule.py`` (the learning rate),
  ``sampler.py`` (epoch order, resumable and sharded), ``precision.py`` (mixed precision),
  ``finite.py`` (non-finite weights end training) and ``selection.py`` (an epoch must beat
  the initial weights);
- ``config.py``: ``TrainingConfig``; ``guards.py``: checks before a model is built or trained;
- ``callbacks.py``: the callback seam; ``checkpoint.py``: checkpoints and ``resume_point``
  (their files: ``checkpoint_format.py``; whether one is this run's: ``checkpoint_checks.py``);
- ``distributed.py``: torch.distributed and DDP (``wrap_ddp``, applied last);
- ``memory.py``: the memory planner pointed at a trainer;
- ``calibrate.py``: the baseline head's calibration before the first epoch;
- ``diagnostics.py``: ``--diagnostics``, per-module gradient norms, update ratios and the
  selection networks' entropy each epoch (a callback); ``overfit.py`` and ``lr_range.py``:
  ``foxhunt diagnose``'s overfit check and learning-rate range test (``diagnose_config.py``
  their settings);
- ``evaluation.py`` (the validation loss), ``inference.py`` (forecasts over a dataset) and
  ``comparison.py`` (the volatility baselines on a run's windows).
"""
