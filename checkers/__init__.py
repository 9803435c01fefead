"""Checkers: history in, verdict out."""
