"""Runnable examples: ``python -m pinn_examples NAME``."""

import os

# Before any example imports TensorFlow: its C++ info and XLA warnings would bury the example's output.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
