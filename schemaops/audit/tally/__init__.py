"""Statistics: counts, rates with intervals, token budgets, diagnoses; merged exactly."""
