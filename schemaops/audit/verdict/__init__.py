"""Verdicts: each output parsed, checked against its schema and classified."""
