"""Run reports: the pictures that make a TFT interpretable."""

from foxhunt.report.collect import ReportData, collect
from foxhunt.report.html import write_report

__all__ = ["ReportData", "collect", "write_report"]
