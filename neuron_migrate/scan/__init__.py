"""The scan: find the torch_xla uses and torch ops in each file, classify them, gate the result."""
