"""Which handle resource a link points at (docs/behaviour.md#linked-providers, #hard-cases "linked lookups match
resource name and provider")."""

from __future__ import annotations

from poolboy.domain.linked import find_linked_index


def entry(provider: str, name: str | None = None) -> dict:
    result: dict = {"provider": {"name": provider}}
    if name is not None:
        result["name"] = name
    return result


def test_an_unnamed_entry_stands_for_its_providers_default_entry() -> None:
    """upstream's resources-mode claims and hand-made handles name no entries; the link still finds its base."""
    resources = [entry("base"), entry("linked")]
    assert find_linked_index({"name": "base"}, resources, own_index=1) == 0


def test_a_named_entry_is_matched_by_name_and_provider() -> None:
    resources = [entry("db", "primary"), entry("db", "replica"), entry("app", "app")]
    assert find_linked_index({"name": "db", "resourceName": "replica"}, resources, own_index=2) == 1
    assert find_linked_index({"name": "db"}, resources, own_index=2) is None  # provider alone is not enough


def test_an_unnamed_entry_does_not_answer_another_resource_name() -> None:
    resources = [entry("db"), entry("app")]
    assert find_linked_index({"name": "db", "resourceName": "database"}, resources, own_index=1) is None
    assert find_linked_index({"name": "other"}, resources, own_index=1) is None


def test_a_resource_never_links_to_itself() -> None:
    assert find_linked_index({"name": "base"}, [entry("base")], own_index=0) is None
