"""The Django platform around the brokers: REST admin, live pages, maintenance."""
