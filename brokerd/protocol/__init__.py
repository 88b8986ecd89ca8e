"""The Kafka wire protocol: framing, the advertised API versions, error codes.

Message schemas come from kio (generated from Kafka's own JSON schemas); this package adds
what kio leaves to the server: frames, header selection and the version table.
"""
