"""The one HTTP layer of warm and probe: every request schemaops sends to a server goes through
``client.ServerClient`` (deadlines, retries, body caps, readiness), with ``auth`` (what is sent),
``urls`` and ``redact`` (what is never shown), ``answer`` (what counts as an answer) and
``body`` (JSON from outside, bounded in depth)."""
