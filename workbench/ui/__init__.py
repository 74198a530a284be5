"""The Qt desktop app: turns core events into pixels and user actions into core calls, nothing more."""
