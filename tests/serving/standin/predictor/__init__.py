"""A stand-in for the prediction server (tests only)."""
