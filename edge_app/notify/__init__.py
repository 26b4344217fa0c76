"""Notifications when an alert starts: signed webhooks and ntfy (docs/notifications.md)."""
