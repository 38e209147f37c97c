"""Runnable examples: ``python -m pinn_examples NAME``."""
