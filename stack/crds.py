"""Poolboy's CustomResourceDefinitions, rendered for any operator domain.

The YAML files in ``helm/crds/`` are the single source of the schemas and are written for the default domain
``poolboy.gpte.redhat.com``. The domain D is also the API group (docs/behaviour.md#conventions), and a CRD's name must
be
``<plural>.<group>``, so running a second Poolboy side by side needs the same CRDs under another group: this
module rewrites exactly those two fields instead of keeping a second copy of the schemas.

As a CLI sub-command (``poolboy crds --domain example.com [--output DIR]``) it prints the CRDs as one
multi-document YAML stream for ``kubectl apply -f -``, or writes one file per kind.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from pathlib import Path
from typing import Any

from poolboy import DEFAULT_DOMAIN

#: ``helm/crds`` of a source checkout; containers point ``POOLBOY_CRDS_DIR`` at their copy instead, because an
#: installed package does not carry the chart.
SOURCE_CRDS_DIR = Path(__file__).resolve().parent.parent / "helm" / "crds"


def crds_dir() -> Path:
    """Where the CRD files are read from: ``$POOLBOY_CRDS_DIR`` if set, else the source checkout's chart."""
    override = os.environ.get("POOLBOY_CRDS_DIR")
    return Path(override) if override else SOURCE_CRDS_DIR


def rename(crd: dict[str, Any], domain: str) -> dict[str, Any]:
    """A copy of ``crd`` whose group is ``domain`` and whose name is ``<plural>.<domain>``."""
    result = copy.deepcopy(crd)
    plural = result["spec"]["names"]["plural"]
    result["spec"]["group"] = domain
    result["metadata"]["name"] = f"{plural}.{domain}"
    return result


def load_crds(domain: str = DEFAULT_DOMAIN, directory: str | Path | None = None) -> list[dict[str, Any]]:
    """The six CRDs for ``domain``, sorted by file name (one ``*.yaml`` file per kind)."""
    import yaml

    source = Path(directory) if directory else crds_dir()
    files = sorted(source.glob("*.yaml"))
    if not files:
        raise FileNotFoundError(f"no CRD files in {source} (set POOLBOY_CRDS_DIR)")
    # libyaml's loader where PyYAML has it: the pure-Python one takes a third of a second for the six schemas, on
    # the start-up path of `poolboy dev`
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [rename(yaml.load(path.read_text(), Loader=loader), domain) for path in files]


def write_crds(domain: str, directory: str | Path) -> list[Path]:
    """Write one ``<plural>.yaml`` per kind for ``domain`` into ``directory``; returns the paths written."""
    import yaml

    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    for crd in load_crds(domain):
        path = target / f"{crd['spec']['names']['plural']}.yaml"
        path.write_text(yaml.dump(crd, Dumper=dumper, sort_keys=False, width=120))
        written.append(path)
    return written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--domain", default=os.environ.get("POOLBOY_DOMAIN") or DEFAULT_DOMAIN,
                        help=f"operator domain and API group (default: $POOLBOY_DOMAIN or {DEFAULT_DOMAIN})")
    parser.add_argument("--output", metavar="DIR",
                        help="write one file per kind into DIR instead of printing a YAML stream")


def run(args: argparse.Namespace) -> int:
    import yaml

    if args.output:
        for path in write_crds(args.domain, args.output):
            print(path)
        return 0
    yaml.safe_dump_all(load_crds(args.domain), sys.stdout, sort_keys=False, width=120)
    return 0


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(prog="python -m stack.crds", description=__doc__.splitlines()[0])
    add_arguments(_parser)
    sys.exit(run(_parser.parse_args()))
