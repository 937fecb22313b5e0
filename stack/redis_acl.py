"""The Redis ACL users of the chart (``helm/files/redis-acl.conf``), read the way the chart reads them, so the tests
run the components against exactly the rules the bundled Redis gets.

The file has one line per user, ``<user> <rules>``, and ``<user>+<option> <rules>`` for rules an option of the chart
adds (``remote-control``: ``flower.remoteControl``). Both the chart and :func:`acl_text` put ``reset on >password``
before a user's rules (``reset off`` for ``default``); the chart's template ``poolboy.redisUserArgs`` is the other
reader, and ``tests/deploy/test_chart.py`` checks that the two agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ACL_FILE = Path(__file__).resolve().parent.parent / "helm" / "files" / "redis-acl.conf"
#: the user nobody may log in as: a client without a user name is refused
DISABLED = "default"
#: the users the components connect as, and the chart's Secret key of each one's password
COMPONENTS = ("watcher", "worker", "beat", "flower", "keda")
ADMIN = "admin"


@dataclass(frozen=True)
class AclUser:
    """One user's rules from the file, without its password: the base line and the lines of each option."""

    name: str
    rules: tuple[str, ...]
    options: Mapping[str, tuple[str, ...]]

    def effective(self, options: Iterable[str] = ()) -> tuple[str, ...]:
        """The rules with those of the chosen options appended (an option the user has no line for adds nothing)."""
        extra = [rule for option in options for rule in self.options.get(option, ())]
        return (*self.rules, *extra)


def load(path: Path = ACL_FILE) -> dict[str, AclUser]:
    """The users of the file, by name, in the file's order."""
    base: dict[str, list[str]] = {}
    options: dict[str, dict[str, tuple[str, ...]]] = {}
    for line in path.read_text().splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        name, _, option = words[0].partition("+")
        if option:
            options.setdefault(name, {})[option] = tuple(words[1:])
        else:
            base[name] = words[1:]
    unknown = set(options) - set(base)
    if unknown:
        raise ValueError(f"{path}: options for users without a line of their own: {sorted(unknown)}")
    return {name: AclUser(name, tuple(rules), options.get(name, {})) for name, rules in base.items()}


def user_line(user: AclUser, password: str | None, options: Iterable[str] = ()) -> str:
    """``user <name> reset on >password <rules>`` (``reset off`` and no password for the disabled user)."""
    if user.name == DISABLED or password is None:
        return " ".join(["user", user.name, "reset", "off", *user.effective(options)])
    return " ".join(["user", user.name, "reset", "on", f">{password}", *user.effective(options)])


def acl_text(passwords: Mapping[str, str], options: Iterable[str] = (), path: Path = ACL_FILE) -> str:
    """An ACL file (``redis-server --aclfile``) of every user of ``path``, each with its password from
    ``passwords``; a user without one is off."""
    chosen = tuple(options)
    users = load(path).values()
    return "".join(user_line(user, passwords.get(user.name), chosen) + "\n" for user in users)


def url(base_url: str, user: str, password: str) -> str:
    """``base_url`` (``redis://host:port/db``, no credentials) with the user's name and password in it."""
    scheme, _, rest = base_url.partition("://")
    return f"{scheme}://{user}:{password}@{rest}"
