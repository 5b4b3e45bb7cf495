"""How the local Vertex treats each field of a Model, Endpoint and DeployedModel: the table
(``local_support.json``) that the providers' preview and the local Vertex both read."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vertex_training.jobs.local_support import SupportTable


@functools.cache
def local_support() -> SupportTable:
    """The table, read when a body is judged: its module loads the protos, which an
    unchanged resource's ``up`` does not need."""
    from vertex_training.jobs.local_support import support_table

    return support_table(Path(__file__).with_name("local_support.json"))
