"""Models of the platform, roles, and access to clusters (brokerd.client + admin API)."""
