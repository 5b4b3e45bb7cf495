"""The component provider's process: ``pulumi-resource-vertex-training`` runs it."""

from vertex_training.provider.host import serve

if __name__ == "__main__":
    serve()
