"""Watching a submitted job: its task table, record and report, and TensorBoard on the
user's machine."""
