"""The command line: ``kubectl poolboy trace claim NAME`` and ``kubectl poolboy why claim NAME`` (kubectl runs
``kubectl-poolboy`` with the words after ``poolboy``), with kubectl's ``-n``, ``--kubeconfig`` and ``--context``.

Exit status: 0 when it answered (``why``: the claim is Ready), 1 when ``why`` explained a claim that is not Ready,
2 when it could not answer (bad arguments, no kubeconfig, the claim cannot be read); never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from kubernetes.config import ConfigException

from poolboy import DEFAULT_DOMAIN
from poolboy_kubectl import render, trace, why
from poolboy_kubectl.reading import OPERATOR_NAMESPACE, ClaimUnreadable, Reader, connect, observe

#: what ``kubectl`` accepts for a Poolboy claim (its short name, plural and full name)
CLAIM_WORDS = {"claim", "claims", "rclaim", "rclaims", "resourceclaim", "resourceclaims"}
NOT_READY, CANNOT_ANSWER = 1, 2


class UsageError(Exception):
    """Arguments that name no claim."""


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="kubectl poolboy", description=(
        "Poolboy for kubectl users: follow a ResourceClaim to its handle, pool, providers and resources (trace), "
        "or say why it is not Ready (why)."))
    commands = top.add_subparsers(dest="command", required=True, metavar="{trace,why}")
    for name, summary, formats in (
            ("trace", "the claim, its ResourceHandle, ResourcePool, ResourceProviders and managed resources as a "
                      "tree, each with its conditions and what it waits for", ("table", "wide", "json")),
            ("why", "why the claim is not Ready, in words (exit status 0 when it is Ready, 1 when not)",
             ("text", "json"))):
        command = commands.add_parser(name, help=summary, description=summary, epilog=(
            f"examples: kubectl poolboy {name} claim hello -n demo; kubectl poolboy {name} rclaim/hello -n demo"))
        command.add_argument("kind", metavar="claim[/NAME]",
                             help="claim, rclaim or resourceclaim (kubectl's names of the kind), or KIND/NAME")
        command.add_argument("name", nargs="?", metavar="NAME", help="the claim's name")
        command.add_argument("-n", "--namespace", help="the claim's namespace (default: the context's)")
        command.add_argument("-o", "--output", choices=formats, default=formats[0], help="output format")
        command.add_argument("--kubeconfig", help="the kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
        command.add_argument("--context", help="the kubeconfig context (default: the current context)")
        command.add_argument("--operator-namespace", default=OPERATOR_NAMESPACE,
                             help="where Poolboy's handles, pools and providers live when the claim does not say "
                                  "(default: $POOLBOY_NAMESPACE or poolboy)")
        command.add_argument("--domain", default=os.environ.get("POOLBOY_DOMAIN", DEFAULT_DOMAIN),
                             help="Poolboy's API group (default: $POOLBOY_DOMAIN or %(default)s)")
    return top


def claim_name(target: Sequence[str], domain: str = DEFAULT_DOMAIN) -> str:
    """The claim's name from ``claim NAME`` or ``rclaim/NAME``; the kind may be any of kubectl's names for it, with
    or without Poolboy's group (``resourceclaims.poolboy.gpte.redhat.com``), never another group's ResourceClaim."""
    words = list(target)
    if len(words) == 1 and "/" in words[0]:
        words = words[0].split("/", 1)
    if len(words) == 2 and words[1]:
        kind, _, group = words[0].lower().partition(".")
        if kind in CLAIM_WORDS and group in ("", domain):
            return words[1]
    raise UsageError(f"expected 'claim NAME' or 'rclaim/NAME', got {' '.join(target)!r}")


def run(arguments: argparse.Namespace) -> int:
    name = claim_name([arguments.kind, *filter(None, [arguments.name])], arguments.domain)
    connection = connect(arguments.kubeconfig, arguments.context)
    namespace = arguments.namespace or connection.namespace
    observed = observe(Reader(connection.api_client, arguments.domain), namespace, name, arguments.operator_namespace)
    if arguments.command == "trace":
        root = trace.build(observed)
        if arguments.output == "json":
            sys.stdout.write(render.as_json(root, observed.unreadable))
        else:
            sys.stdout.write(render.table(root, observed.unreadable, wide=arguments.output == "wide"))
        return 0
    explained = why.explain(observed, datetime.now(UTC))
    write = render.explanation_json if arguments.output == "json" else render.explanation
    sys.stdout.write(write(explained))
    return 0 if explained.ready else NOT_READY


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parser().parse_args(argv)
    try:
        return run(arguments)
    except (UsageError, ClaimUnreadable) as error:
        print(f"error: {error}", file=sys.stderr)
    except ConfigException as error:
        print(f"error: kubeconfig: {error}", file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # a kubeconfig that does not load, an API server that cannot be reached, ...
        print(f"error: {type(error).__name__}: {error}", file=sys.stderr)
    return CANNOT_ANSWER


if __name__ == "__main__":
    sys.exit(main())
