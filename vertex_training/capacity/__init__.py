"""Persistent resources: capacity kept warm, and the jobs placed on it."""
