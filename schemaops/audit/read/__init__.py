"""Reading: the audit's input (shards listed and opened, records and their output texts)."""
