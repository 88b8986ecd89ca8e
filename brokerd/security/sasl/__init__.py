"""SASL authentication on the Kafka port (SaslHandshake/SaslAuthenticate), as Kafka's
SaslServerAuthenticator speaks it, and its client side for inter-broker connections."""
