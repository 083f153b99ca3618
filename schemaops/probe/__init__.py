"""``schemaops probe``: does the server really apply the grammar, path by path?

``run_probe(ProbeSettings(server=URL)) -> (document, exit_code)``; see ``run`` for the
verdicts and ``canary`` for the canary design and its false-verdict probabilities.
"""

from schemaops.probe.paths import PATHS
from schemaops.probe.run import VERDICTS, ProbeSettings, exit_code, run_probe

__all__ = ["PATHS", "VERDICTS", "ProbeSettings", "exit_code", "run_probe"]
