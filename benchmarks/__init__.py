"""Benchmarks: ``python -m benchmarks NAME``; ratios measured side by side in one run."""
