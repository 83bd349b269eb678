"""docker-compose.yml refers only to things that exist, and gives the notebooks what they
read from the environment. (No Docker engine is needed: the file is checked as data.)"""

from __future__ import annotations

import json
import re
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from broker.config import BrokerConfig, tomllib

ROOT = Path(__file__).resolve().parent.parent
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
# What notebook code reads from the environment: os.environ["X"], .get("X"), os.getenv("X").
ENV_READ = re.compile(r"""os\.(?:environ\[|environ\.get\(|getenv\()\s*["'](\w+)["']""")


def environment(service: dict[str, Any]) -> dict[str, str]:
    """A service's environment, given either as a mapping or as a list of NAME=value."""
    env = service.get("environment", {})
    if isinstance(env, list):
        return dict(item.split("=", 1) for item in env)
    return {name: str(value) for name, value in env.items()}


def notebook_env_vars() -> set[str]:
    """AMQP_URI, the notebooks' documented input, and every variable their code reads."""
    names = {"AMQP_URI"}
    for notebook in (ROOT / "notebooks").glob("*.ipynb"):
        for cell in json.loads(notebook.read_text())["cells"]:
            if cell["cell_type"] == "code":
                source = cell["source"]  # a string, or a list of lines
                text = source if isinstance(source, str) else "".join(source)
                names |= set(ENV_READ.findall(text))
    return names


def test_services() -> None:
    assert set(SERVICES) == {"broker", "rabbitmq", "jupyter"}


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_build_context_dockerfile_and_target_exist(name: str) -> None:
    build = SERVICES[name].get("build")
    if build is None:
        assert "image" in SERVICES[name], f"{name} has neither build nor image"
        return
    if isinstance(build, str):
        build = {"context": build}
    context = ROOT / build.get("context", ".")
    assert context.is_dir(), f"{name}: build context {context} does not exist"
    dockerfile = context / build.get("dockerfile", "Dockerfile")
    assert dockerfile.is_file(), f"{name}: {dockerfile} does not exist"
    if "target" in build:
        stages = re.findall(r"(?im)^FROM\s+\S+\s+AS\s+(\S+)", dockerfile.read_text())
        assert build["target"] in stages, f"{name}: no stage {build['target']!r} in {dockerfile}"


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_bind_mounted_paths_exist(name: str) -> None:
    for volume in SERVICES[name].get("volumes", []):
        source = volume["source"] if isinstance(volume, dict) else volume.split(":", 1)[0]
        if source.startswith((".", "/")):
            assert (ROOT / source).exists(), f"{name}: mounted path {source} does not exist"


def test_broker_command_is_the_packaged_console_script() -> None:
    command = SERVICES["broker"]["command"]
    assert command[0] == "amqp-broker"
    assert entry_points(group="console_scripts", name="amqp-broker"), (
        "the installed amqp-spark distribution declares no amqp-broker console script"
    )


def test_notebook_environment_is_set() -> None:
    env = environment(SERVICES["jupyter"])
    missing = notebook_env_vars() - set(env)
    assert not missing, f"the jupyter service does not set {sorted(missing)}"


def test_notebook_amqp_uri_points_at_the_broker_service() -> None:
    uri = urlsplit(environment(SERVICES["jupyter"])["AMQP_URI"])
    assert uri.scheme == "amqp"
    assert uri.hostname in SERVICES
    assert uri.port == int(SERVICES[uri.hostname]["command"][-1])
    assert uri.hostname in SERVICES["jupyter"].get("depends_on", [])


def test_no_host_port_is_published_twice() -> None:
    published = [
        str(port).rsplit(":", 1)[0].rsplit(":", 1)[-1]
        for service in SERVICES.values()
        for port in service.get("ports", [])
    ]
    assert len(published) == len(set(published)), f"host ports published twice: {published}"


def broker_config() -> BrokerConfig:
    """The configuration the broker service runs with: its ``--config`` file, which the
    image holds under /src (the Dockerfile copies the repository there)."""
    command = SERVICES["broker"]["command"]
    path = Path(command[command.index("--config") + 1])
    return BrokerConfig.from_toml(ROOT / path.relative_to("/src"))


def test_the_broker_service_publishes_its_management_port() -> None:
    management = broker_config().management
    assert management.enabled and management.host == "0.0.0.0"
    container_ports = [str(p).rsplit(":", 1)[-1] for p in SERVICES["broker"]["ports"]]
    assert str(management.port) in container_ports == ["5672", str(management.port)]


def test_guest_may_log_in_through_dockers_network_as_in_rabbitmqs_image() -> None:
    assert "guest" not in broker_config().loopback_users


def test_the_broker_image_installs_the_brokers_dependencies() -> None:
    """The broker stage installs the package without dependencies (no Spark), so it names
    the others itself: every runtime dependency but Spark's and tomli (3.11 has tomllib)."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    names = {
        re.split(r"[<>=;\s\[]", d, maxsplit=1)[0] for d in pyproject["project"]["dependencies"]
    }
    dockerfile = (ROOT / "Dockerfile").read_text()
    broker_stage = dockerfile.split("FROM ")[1]
    assert "AS broker" in broker_stage
    missing = {n for n in names - {"pyspark", "pyarrow", "tomli"} if n not in broker_stage}
    assert not missing, f"the broker image does not install {sorted(missing)}"
