"""Pre-deploy gate: every registry schema compiles on one backend within a budget and the
backend enforces its examples. ``run_check(...) -> CheckReport``; ``write_junit`` for CI.
"""

from schemaops.check.gate import CheckCase, CheckReport, Problem, evaluate, run_check
from schemaops.check.junit import junit_xml, write_junit

__all__ = [
    "CheckCase",
    "CheckReport",
    "Problem",
    "evaluate",
    "junit_xml",
    "run_check",
    "write_junit",
]
