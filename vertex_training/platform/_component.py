"""What every component of the platform shares."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import pulumi

ArgsT = TypeVar("ArgsT")


class PlatformComponent(pulumi.ComponentResource, Generic[ArgsT]):
    """A component of the platform, ``vertex-training:platform:<its class name>``: built from
    its frozen Args by ``_build``, which returns the outputs the component registers."""

    def __init__(self, name: str, args: ArgsT, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(f"vertex-training:platform:{type(self).__name__}", name, None, opts)
        self._depends_on = opts.depends_on if opts is not None else None
        self.register_outputs(self._build(name, args))

    def _build(self, name: str, args: ArgsT) -> dict[str, Any]:
        raise NotImplementedError

    def _child(self, **extra: Any) -> pulumi.ResourceOptions:
        """Options for a child: parented, and waiting for what the component waits for.

        The engine does not hand a component's ``depends_on`` down to its children, so a
        child could otherwise start before, say, the APIs it needs are enabled.
        """
        return pulumi.ResourceOptions(parent=self, depends_on=self._depends_on, **extra)
