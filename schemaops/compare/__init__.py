"""Backend comparison: compile time, per-token cost and enforcement per schema and backend.

Public API (``measure``/``measure_many`` return one result dict per schema and backend, as
docs/contracts/compare.md describes; see ``measure``)::

    from schemaops.compare import measure, measure_many, STATUSES, keyword_matrix
"""

from schemaops.compare.generate import GenerationError, generate_valid
from schemaops.compare.instances import violated_keyword
from schemaops.compare.measure import measure, measure_many, normalise_item
from schemaops.compare.model import (
    CRASH,
    ERROR,
    OK,
    OOM,
    STATUSES,
    TIMEOUT,
    UNSUPPORTED,
    VERDICTS,
)
from schemaops.compare.report import keyword_matrix, keyword_status
from schemaops.compare.suite import SuiteCase, suite_cases

__all__ = [
    "CRASH",
    "ERROR",
    "OK",
    "OOM",
    "STATUSES",
    "TIMEOUT",
    "UNSUPPORTED",
    "VERDICTS",
    "GenerationError",
    "SuiteCase",
    "generate_valid",
    "keyword_matrix",
    "keyword_status",
    "measure",
    "measure_many",
    "normalise_item",
    "suite_cases",
    "violated_keyword",
]
