#!/usr/bin/env python3
"""Fetch the test corpora (JSONSchemaBench, JSON-Schema-Test-Suite) at pinned, checksummed
content into the cache folder; see ``schemaops/corpora.py``. Stdlib only: runs with any
Python >= 3.10, before or after ``scripts/install.sh``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from schemaops.corpora import main  # noqa: E402

raise SystemExit(main())
