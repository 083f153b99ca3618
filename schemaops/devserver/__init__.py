"""A real SGLang 0.5.23 server on CPU for tests and demos: real grammar enforcement, tiny model.

Public API (the warm-up tests and the integration fixtures rely on it):

- ``ensure_env(cache_dir=None) -> DevEnv``: install once (venv, sgl_kernel stub, tiny model).
- ``start_servers(n=1, grammar_backend="xgrammar", dp_size=1, port=None,
  disable_any_whitespace=True, extra_args=None, cache_dir=None, timeout=...) -> list[DevServer]``
- ``DevServer``: ``.url``, ``.port``, ``.pid``, ``.log_path``, ``.start()``, ``.stop()``,
  ``.kill()`` (crash), ``.restart()`` (same port), ``.info()``; a context manager.
- ``stop_servers(servers=None, cache_dir=None)``: stop those, or all recorded in the cache dir.

The text the model writes is meaningless; only the grammar layer is real.
"""

from schemaops.devserver.env import (
    DevEnv,
    DevServerError,
    default_cache_dir,
    ensure_env,
    is_installed,
)
from schemaops.devserver.launcher import (
    GRAMMAR_BACKENDS,
    DevServer,
    running_servers,
    start_servers,
    stop_servers,
)

__all__ = [
    "GRAMMAR_BACKENDS",
    "DevEnv",
    "DevServer",
    "DevServerError",
    "default_cache_dir",
    "ensure_env",
    "is_installed",
    "running_servers",
    "start_servers",
    "stop_servers",
]
