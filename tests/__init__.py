"""Tests of this repository."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
"""This checkout: the repository's own Pulumi project, its stacks and examples."""
