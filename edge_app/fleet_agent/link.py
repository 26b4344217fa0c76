"""What the fleet agent needs of the appliance: four calls, not the whole ``Appliance``.

The agent receives ``R/config/desired`` payloads, publishes ``R/config/reported``, asks the
broker for the retained desired configuration again, and tells the status page how remote
configuration is authenticated. ``edge_app.appliance.appliance.Appliance`` provides these; a test
checks that its methods keep these signatures.
"""
from __future__ import annotations

from typing import Any, Callable, Dict

from typing_extensions import Protocol

from edge_app.reporting.protocol import RemoteConfigReport


class ApplianceFleetLink(Protocol):
    """The appliance's side of the fleet agent's wiring."""

    def on_config_desired(self, handler: Callable[[bytes], None]) -> None:
        """Hand every ``R/config/desired`` payload to ``handler``, across MQTT reconnects."""

    def refetch_config_desired(self) -> None:
        """Subscribe to ``R/config/desired`` again: the broker hands over its retained message anew."""

    def on_remote_config_report(self, provider: Callable[[], RemoteConfigReport]) -> None:
        """Where the status reads whether and how remote configuration is authenticated."""

    def publish_config_reported(self, body: Dict[str, Any]) -> bool:
        """Retained ``R/config/reported``; False when it could not be queued."""
