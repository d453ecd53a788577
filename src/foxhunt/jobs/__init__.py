"""Whole jobs: bars in, a trained run folder out. They sit above the training loop and the
run folder, which they tie together (nothing below imports them)."""

from foxhunt.jobs.train import JobOptions, JobResult, fit_model_config, train

__all__ = ["JobOptions", "JobResult", "fit_model_config", "train"]
