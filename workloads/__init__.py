"""Workloads: what clients do to the system and how their history is checked (DESIGN.md section 7)."""
