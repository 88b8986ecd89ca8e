"""The broker's fetch session cache: max.incremental.fetch.session.cache.slots and Kafka's
eviction rules (stale first; followers' sessions before consumers'; bigger before smaller;
nothing younger than 120 s evicted by a consumer)."""

from brokerd.server.fetch_session import EVICTION_MS, FetchSessionCache


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, ms: float) -> None:
        self.now += ms / 1000


def filled(clock, *sessions):
    cache = FetchSessionCache(len(sessions), clock=clock)
    made = []
    for privileged, size in sessions:
        session = cache.new_session(privileged, size)
        session.partitions.update({("t", p): None for p in range(size)})
        made.append(session)
    return cache, made


def test_a_full_cache_of_young_sessions_refuses_a_consumer_session():
    clock = Clock()
    cache, made = filled(clock, (False, 5), (False, 1))
    assert cache.new_session(False, 100) is None
    assert set(cache.sessions) == {s.session_id for s in made}


def test_a_follower_session_evicts_the_smallest_consumer_session():
    clock = Clock()
    cache, (big, small, follower) = filled(clock, (False, 5), (False, 1), (True, 10))
    new = cache.new_session(True, 3)
    assert new is not None
    assert set(cache.sessions) == {big.session_id, follower.session_id, new.session_id}
    assert cache.evictions == 1


def test_a_follower_never_evicts_a_young_follower_session():
    clock = Clock()
    cache, _ = filled(clock, (True, 5))
    assert cache.new_session(True, 1000) is None


def test_after_120s_a_bigger_session_evicts_a_smaller_one_and_a_stale_one_goes_first():
    clock = Clock()
    cache, (small, big) = filled(clock, (False, 1), (True, 50))
    clock.advance(EVICTION_MS + 1)
    cache.incremental(small.session_id, 1)
    cache.incremental(big.session_id, 1)
    # Both old enough to be evicted by size: a consumer with 2 partitions beats 1.
    assert cache.new_session(False, 1) is None  # equal size: not more valuable
    replacement = cache.new_session(False, 2)
    assert replacement is not None and small.session_id not in cache.sessions
    # The follower's session, unused for 120 s, is stale: evicted even by a small one.
    clock.advance(EVICTION_MS / 2)
    cache.incremental(replacement.session_id, 1)
    clock.advance(EVICTION_MS / 2 + 1)
    assert cache.new_session(False, 0) is not None and big.session_id not in cache.sessions
