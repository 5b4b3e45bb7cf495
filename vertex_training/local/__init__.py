"""The local Vertex AI: the Vertex AI v1 API served on this machine."""
