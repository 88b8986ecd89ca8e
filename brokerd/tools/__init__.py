"""Operator tools (kafka-dump-log.sh counterpart, ...); each works as `python -m`."""
