"""A pull-request event planned into targets and carried out by the one executor (Action and App)."""
