"""The component provider's process: ``pulumi-resource-vertex-training`` runs it.
``python -m vertex_training.provider schema`` prints its schema (what ``make sdk``
generates the SDKs from) instead."""

import sys

from vertex_training.provider.host import schema, serve

if __name__ == "__main__":
    if sys.argv[1:] == ["schema"]:
        print(schema())
    else:
        serve()
