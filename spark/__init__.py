"""Spark: aggregate many runs and check histories too big for one machine (DESIGN.md section 9)."""
