"""Spark: aggregate many runs and check histories too big for one machine."""
