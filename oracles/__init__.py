"""Independent pure-Python/NumPy ports of the shipped models (test oracles).

They live outside the package on purpose: they share no code with the C
models or the runtime, so agreement between the two is evidence.
"""
