"""Checkers: history in, verdict out (DESIGN.md section 8)."""
