"""Fairness between refused clients (cosyweb.pipeline.admission): places that free up are held,
in refusal order, for clients refused earlier, until their Retry-After plus a grace has passed.
Plain bookkeeping driven with a fake clock: deterministic."""

from __future__ import annotations

import pytest

from cosyweb.errors import BusyError
from cosyweb.pipeline.admission import HOLD_GRACE_S, Admission


class FakeJob:
    """What Admission reads of a job."""

    def __init__(self, jid: str, client_id: str | None) -> None:
        self.id, self.client_id, self.estimated_audio_s = jid, client_id, 1.0


@pytest.fixture
def clock():
    now = [100.0]

    def read() -> float:
        return now[0]

    read.advance = lambda s: now.__setitem__(0, now[0] + s)  # type: ignore[attr-defined]
    return read


def make(clock, max_active=1, max_queue=0) -> Admission:
    return Admission(max_active, max_queue, 600.0, 1, estimate_wait_s=lambda _s: 2.0, clock=clock)


def refused(adm: Admission, job: FakeJob) -> str:
    with pytest.raises(BusyError) as ei:
        adm.admit(job)
    return ei.value.details["reason"]


def test_a_freed_place_goes_to_the_client_refused_first(clock):
    adm = make(clock)
    running = FakeJob("r", "fast")
    assert adm.admit(running)
    assert refused(adm, FakeJob("s1", "slow")) == "queue_full"  # the slow client is refused first
    adm.remove(running)
    # the fast client retries at once: the place is held for the slow one
    assert refused(adm, FakeJob("f2", "fast")) == "held_for_earlier"
    assert refused(adm, FakeJob("n1", None)) == "held_for_earlier"  # anonymous jobs wait too
    clock.advance(1.0)
    assert adm.admit(FakeJob("s2", "slow"))  # the slow client comes back within its hold
    assert adm.n_held_ahead("fast") == 0  # its turn is taken: nothing held any more


def test_holds_are_served_in_refusal_order_and_a_retry_keeps_the_place_in_line(clock):
    adm = make(clock, max_active=1, max_queue=1)
    a = FakeJob("a", "A")
    assert adm.admit(a) and not adm.admit(FakeJob("b", "B"))  # one running, one queued
    for cid in ("C", "D", "C"):  # C refused, then D, then C again (keeps its place ahead of D)
        assert refused(adm, FakeJob(f"x{cid}", cid)) == "queue_full"
    adm.remove(a)
    adm.promote()  # B gets the slot; one queue place is free
    assert adm.n_free_places == 1
    assert refused(adm, FakeJob("d2", "D")) == "held_for_earlier"
    assert not adm.admit(FakeJob("c2", "C"))  # C takes the queue place
    assert refused(adm, FakeJob("d3", "D")) == "queue_full"  # full again: plain busy


def test_a_client_that_does_not_come_back_loses_its_turn(clock):
    adm = make(clock)
    running = FakeJob("r", "A")
    assert adm.admit(running)
    assert refused(adm, FakeJob("g", "gone")) == "queue_full"
    adm.remove(running)
    assert refused(adm, FakeJob("n", "new")) == "held_for_earlier"
    clock.advance(2.0 + HOLD_GRACE_S + 0.1)  # Retry-After (2 s) + grace has passed
    assert adm.admit(FakeJob("n2", "new"))
    assert adm.n_held_ahead("new") == 0


def test_without_refusals_nothing_is_held(clock):
    adm = make(clock, max_active=2, max_queue=1)
    assert adm.admit(FakeJob("a", "A")) and adm.admit(FakeJob("b", "B"))
    assert not adm.admit(FakeJob("c", None))
    assert adm.n_held_ahead(None) == 0 and adm.n_free_places == 0
