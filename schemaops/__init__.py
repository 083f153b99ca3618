"""schemaops: structured-output and schema reliability for LLM serving."""

__version__ = "0.1.0"
