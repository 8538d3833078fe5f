"""Benchmarks of tfyarn against the local YARN: where the time goes from submit to training.

Run ``bash bench/run_all.sh`` (or ``--quick``); see docs/benchmarks.md. Nothing here asserts
a time: the scripts print figures and write them to ``bench/results/*.json`` and PNG plots.
"""
