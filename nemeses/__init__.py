"""Nemeses: the faults a test injects, each done for real and undone at heal (DESIGN.md section 6)."""
