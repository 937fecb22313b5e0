"""The container image of the Helm chart, built here from the project's Dockerfile without a Docker daemon
(``scripts/build-image.sh``) and run as the chart's pods run it (:mod:`tests.deploy.image`): every component's
command line starts, every module of the product imports, the process is uid 1000 without capabilities, and only /tmp
is writable."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy import image
from tests.deploy.image import Container

pytestmark = [pytest.mark.image, pytest.mark.timeout(image.BUILD_TIMEOUT + 300)]

#: the packages of the product the image runs (devcluster and procutil come along as the CLI's dependencies)
PRODUCT = ("poolboy", "workers", "watcher", "cache", "stack")

#: imports every module of the packages it is given and prints {"imported": {package: count}, "failed": {module: error}}
IMPORT_ALL = """
import importlib, json, pkgutil, sys
imported, failed = {}, {}
def note(name, error):
    failed[name] = f"{type(error).__name__}: {error}"
for top in sys.argv[1:]:
    try:
        package = importlib.import_module(top)
    except Exception as error:
        note(top, error)
        continue
    imported[top] = 1
    for module in pkgutil.walk_packages(package.__path__, top + ".", onerror=lambda name: None):
        try:
            importlib.import_module(module.name)
            imported[top] += 1
        except Exception as error:
            note(module.name, error)
print(json.dumps({"imported": imported, "failed": failed}))
"""

#: tries to create a file in each directory and prints {directory: "written" or the errno name}
WRITE_EVERYWHERE = """
import errno, json, os, sys
outcome = {}
for directory in sys.argv[1:]:
    try:
        with open(os.path.join(directory, "written-by-the-test"), "w") as file:
            file.write("x")
        outcome[directory] = "written"
    except OSError as error:
        outcome[directory] = errno.errorcode[error.errno]
print(json.dumps(outcome))
"""


@pytest.fixture(scope="module")
def ref() -> str:
    return image.build()


@pytest.fixture(scope="module")
def config(ref: str) -> dict[str, Any]:
    return image.image_config(ref)


@pytest.fixture(scope="module")
def container(ref: str, config: dict[str, Any]) -> Iterator[Container]:
    # not under pytest's base temporary directory: that one is private to its owner, and uid 1000 must reach it
    with tempfile.TemporaryDirectory(prefix="poolboy-image-") as directory:
        yield image.unpack(ref, Path(directory), config)


def python_json(container: Container, code: str, *args: str) -> Any:
    """What ``code``, run by the image's python, printed as JSON."""
    result = container.run("python", "-c", code, *args, entrypoint=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_image_user_is_1000_not_root(config: dict[str, Any]) -> None:
    assert config["User"] == "1000:1000"


def test_image_entrypoint_is_poolboy_in_tmp(config: dict[str, Any]) -> None:
    assert config["Entrypoint"] == ["poolboy"]
    assert config["WorkingDir"] == "/tmp"


def test_image_config_is_what_the_dockerfile_says(config: dict[str, Any]) -> None:
    instructions = image.dockerfile_instructions()
    declared = dict(pair.split("=", 1) for _, arguments in instructions if _ == "ENV" for pair in arguments.split())
    environment = dict(variable.split("=", 1) for variable in config["Env"])
    assert {name: environment.get(name) for name in declared} == declared
    assert config["User"] == image.last(instructions, "USER")
    assert config["WorkingDir"] == image.last(instructions, "WORKDIR")
    assert config["Entrypoint"] == json.loads(image.last(instructions, "ENTRYPOINT"))
    assert config["Cmd"] == json.loads(image.last(instructions, "CMD"))
    assert set(config["ExposedPorts"]) == {f"{port}/tcp" for port in image.last(instructions, "EXPOSE").split()}


@pytest.mark.parametrize("component", ["worker", "watcher", "beat"])
def test_component_help_runs_in_the_image(container: Container, component: str) -> None:
    result = container.run(component, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: poolboy {component}"), result.stdout


def test_every_product_module_imports_in_the_image(container: Container) -> None:
    outcome = python_json(container, IMPORT_ALL, *PRODUCT)
    assert outcome["failed"] == {}
    assert set(outcome["imported"]) == set(PRODUCT)
    assert all(count > 1 for count in outcome["imported"].values()), outcome["imported"]


def test_the_image_carries_the_crds_of_the_chart(container: Container) -> None:
    result = container.run("crds")
    assert result.returncode == 0, result.stderr
    shipped = [yaml.safe_load(path.read_text()) for path in sorted((image.ROOT / "helm" / "crds").glob("*.yaml"))]
    assert [doc for doc in yaml.safe_load_all(result.stdout) if doc] == shipped


def test_processes_in_the_image_run_as_uid_1000_without_capabilities(container: Container) -> None:
    inside = container.run("cat", "/proc/self/status", entrypoint=False)
    assert inside.returncode == 0, inside.stderr
    fields = dict(line.split(":\t", 1) for line in inside.stdout.splitlines() if ":\t" in line)
    assert fields["Uid"].split() == ["1000"] * 4
    assert fields["Gid"].split() == ["1000"] * 4
    assert fields["Groups"].strip() == ""
    assert int(fields["CapEff"], 16) == int(fields["CapPrm"], 16) == 0
    assert fields["NoNewPrivs"].strip() == "1"


def test_root_filesystem_is_read_only_and_only_tmp_is_writable(container: Container) -> None:
    outside = ["/", "/app", "/etc", "/opt/poolboy", "/usr/lib", "/var/tmp"]
    outcome = python_json(container, WRITE_EVERYWHERE, *outside, "/tmp")
    assert outcome == {**dict.fromkeys(outside, "EROFS"), "/tmp": "written"}
