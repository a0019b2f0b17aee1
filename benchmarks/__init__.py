"""Reproducible measurements: medians and ratios against a baseline from the same run."""
