FORBIDDEN_ROLES = frozenset({"roles/owner", "roles/editor", "roles/viewer"})
"""Primitive roles no platform component grants (the identity and tracking tests check)."""
