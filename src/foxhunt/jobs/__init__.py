"""Whole jobs: bars in, a trained run folder out. They sit above the training loop and the
run folder, which they tie together (nothing below imports them). A train job is a chain of
named stages (`train.py` says which); callers compose the ones they need."""

from foxhunt.jobs.options import JobOptions, JobResult, JobSetting
from foxhunt.jobs.prepare import fit_model_config
from foxhunt.jobs.train import train

__all__ = ["JobOptions", "JobResult", "JobSetting", "fit_model_config", "train"]
