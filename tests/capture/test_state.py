import itertools

import pytest

from edge_app.capture.state import ALLOWED_TRANSITIONS, IllegalTransition, StateMachine, StreamState, check_transition

S = StreamState

EXPECTED_ALLOWED = {
    (S.STOPPED, S.CONNECTING),
    (S.CONNECTING, S.STREAMING), (S.CONNECTING, S.RECONNECTING), (S.CONNECTING, S.STOPPED), (S.CONNECTING, S.ERROR),
    (S.STREAMING, S.RECONNECTING), (S.STREAMING, S.STOPPED), (S.STREAMING, S.ERROR),
    (S.RECONNECTING, S.STREAMING), (S.RECONNECTING, S.STOPPED), (S.RECONNECTING, S.ERROR),
    (S.ERROR, S.CONNECTING), (S.ERROR, S.STOPPED),
}


def test_values_are_exactly_the_spec_states():
    assert [s.value for s in StreamState] == ["connecting", "streaming", "reconnecting", "stopped", "error"]
    assert str(StreamState.STREAMING) == "streaming"
    assert set(ALLOWED_TRANSITIONS) == set(StreamState)


@pytest.mark.parametrize("old,new", sorted(EXPECTED_ALLOWED, key=str))
def test_allowed_transition(old, new):
    check_transition(old, new)
    machine = StateMachine(old)
    assert machine.transition(new, "why") is True
    assert machine.snapshot() == (new, "why")


@pytest.mark.parametrize(
    "old,new",
    [pair for pair in itertools.product(StreamState, StreamState) if pair not in EXPECTED_ALLOWED and pair[0] != pair[1]],
)
def test_illegal_transition_raises(old, new):
    with pytest.raises(IllegalTransition, match=f"from {old.value} to {new.value}"):
        check_transition(old, new)
    machine = StateMachine(old)
    with pytest.raises(IllegalTransition):
        machine.transition(new)
    assert machine.state is old


def test_same_state_is_no_change_but_refreshes_error():
    machine = StateMachine(S.RECONNECTING)
    assert machine.transition(S.RECONNECTING, "second failure") is False
    assert machine.error == "second failure"
