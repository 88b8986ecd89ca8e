"""A broker whose log dir another broker holds refuses to start, and leaves that dir alone:
no clean-shutdown marker (which would let the owner skip recovery after a crash) and no
checkpoints of its own (which would overwrite the owner's)."""

from __future__ import annotations

import pytest

from tests.conftest import new_broker


def test_a_broker_refused_a_log_dir_in_use_writes_nothing_there(zookeeper, tmp_path_factory):
    owner = new_broker(zookeeper, tmp_path_factory).start()
    try:
        log_dir = owner.dir / "logs"
        assert not (log_dir / ".kafka_cleanshutdown").exists()  # removed at start-up
        before = {p.name: p.read_bytes() for p in log_dir.iterdir() if p.is_file()}

        intruder = new_broker(zookeeper, tmp_path_factory, broker_id=2)
        intruder.props["log.dirs"] = str(log_dir)
        with pytest.raises(RuntimeError, match="in use by another broker"):
            intruder.start()
        intruder.kill()

        assert not (log_dir / ".kafka_cleanshutdown").exists()
        after = {p.name: p.read_bytes() for p in log_dir.iterdir() if p.is_file()}
        assert after == before
        assert owner.alive()
    finally:
        owner.terminate()
