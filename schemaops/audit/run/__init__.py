"""Execution: the one loop over lines (``lines``), and the strategies that run it: one process
or shards (``pipeline``, ``multi``), ``--jobs`` byte ranges (``parallel``), routed by schema
(``routing``) and Ray (``ray_audit``); each merges its parts into one ``Tally``."""
