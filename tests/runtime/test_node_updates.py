"""Graph nodes write typed updates, and every place ``route`` can go is declared."""

from __future__ import annotations

from typing import get_args, get_type_hints

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END

from framework.runtime.graph import build_graph
from framework.runtime.state import RoomState, RoomUpdate, RouteTo, TurnTo


def test_a_node_update_names_exactly_the_state_keys() -> None:
    """A key added to the state but not to the update type would be an unchecked write."""
    assert set(get_type_hints(RoomUpdate)) == set(get_type_hints(RoomState))


def test_route_declares_every_goto_including_the_pause_for_a_person() -> None:
    assert END in get_args(RouteTo)
    assert "human" in get_args(RouteTo)  # a double-texting interrupt pauses the room
    graph = build_graph(InMemorySaver()).get_graph()
    from_route = {edge.target for edge in graph.edges if edge.source == "route"}
    assert from_route == {"turn", "lane", "human", END}
    from_turn = {edge.target for edge in graph.edges if edge.source == "turn"}
    assert from_turn == set(get_args(TurnTo))
