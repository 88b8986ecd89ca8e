"""Live pages: Django templates kept current over Channels WebSockets by a collector."""
