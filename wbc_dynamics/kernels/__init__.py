"""numba-compiled kernels over the flat model arrays (no Python objects per body)."""
