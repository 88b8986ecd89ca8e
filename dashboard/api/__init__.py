"""REST admin under /api/v3/ in Confluent REST Proxy v3's resource layout (DRF)."""
