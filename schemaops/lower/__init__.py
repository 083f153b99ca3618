"""``lower``: turn a schema a backend cannot serve or enforce into one it can, plus a residual.

Public API::

    from schemaops.lower import lower_schema, lower_registry, check_residual, probe_backend

- ``probe_backend(backend) -> {probe: capability}``: what the real library does with each
  keyword (``probes``), measured with compare's isolated compile and enforcement walk;
- ``lower_schema(bundled_schema, caps, backend) -> Lowered``: served schema, rewrites (each
  declaring its effect: exact, widens with a residual rule, narrows; ``model``), residual
  rules (``passes``);
- ``check_residual(original, rules, instance) -> ResidualCheck``: the application's check
  after decoding (``residual``);
- ``lower_registry(registry, backend, out=...) -> LowerReport``: lower, prove (compile, walk,
  differential) and write a served registry folder (``run``); a served schema that runs out
  of time or memory compiling climbs the relaxation ladder (``relax``: ``LADDER``, each step
  taken a ``Relaxation`` in its case);
- ``lower_registry_target(registry, target, out=...) -> TargetReport``: the same for a hosted
  provider (``--target openai|anthropic|gemini``: ``targets`` rewrites, ``target_run`` proves).
"""

from schemaops.lower.model import Lowered, Rewrite
from schemaops.lower.passes import lower_schema
from schemaops.lower.probes import PROBES, probe_backend
from schemaops.lower.prove import Differential, differential
from schemaops.lower.relax import LADDER, Relaxation
from schemaops.lower.residual import ResidualCheck, ResidualRule, check_residual
from schemaops.lower.run import LOWERED_FROM, LowerCase, LowerReport, lower_registry
from schemaops.lower.target_run import TargetCase, TargetReport, lower_registry_target
from schemaops.lower.targets import TargetLowering, lower_for_target

__all__ = [
    "LADDER",
    "LOWERED_FROM",
    "PROBES",
    "Differential",
    "LowerCase",
    "LowerReport",
    "Lowered",
    "Relaxation",
    "ResidualCheck",
    "ResidualRule",
    "Rewrite",
    "TargetCase",
    "TargetLowering",
    "TargetReport",
    "check_residual",
    "differential",
    "lower_for_target",
    "lower_registry",
    "lower_registry_target",
    "lower_schema",
    "probe_backend",
]
