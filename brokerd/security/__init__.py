"""Security on the Kafka port: TLS contexts (tls.py) and principals (principal.py)."""
