"""The one config reader: a stack's YAML -> validated settings."""
