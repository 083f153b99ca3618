"""Audit model outputs: classify each, estimate per-step and compound success, gate, report.

The one library entry point is ``run_audit(path, AuditOptions(...)) -> AuditResult``;
``AuditResult.to_json()`` is the ``--json`` document every report renders.
"""

from schemaops.audit.run.pipeline import AuditOptions, AuditResult, run_audit
from schemaops.audit.verdict.classify import Classification, classify_parse_failure, parse_output

__all__ = [
    "AuditOptions",
    "AuditResult",
    "Classification",
    "classify_parse_failure",
    "parse_output",
    "run_audit",
]
