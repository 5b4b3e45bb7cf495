"""Resource options shared by every component."""

from __future__ import annotations

import pulumi


def child_options(
    parent: pulumi.Resource, opts: pulumi.ResourceOptions | None, **extra: object
) -> pulumi.ResourceOptions:
    """Options for a component's child: parented, and waiting for what the component waits for.

    The engine does not hand a component's ``depends_on`` down to its children, so a
    child could otherwise start before, say, the APIs it needs are enabled.
    """
    depends_on = opts.depends_on if opts is not None else None
    return pulumi.ResourceOptions(parent=parent, depends_on=depends_on, **extra)  # type: ignore[arg-type]
