"""Authentication failures: the message goes to the client as is (Kafka's
SaslAuthenticationException), so it must never say which part of the credentials was wrong."""


class SaslAuthenticationError(Exception):
    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else "Authentication failed"
