"""appmaster/common/gpus.py and the local cluster's stand-in nvidia-smi, on recorded nvidia-smi
output (an NVIDIA H100 80GB node, driver 580: tfyarn/localyarn/nvidia_smi_h100/). No YARN, no
GPU."""

from __future__ import annotations

import os
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from appmaster.common import gpus
from tfyarn.localyarn import gpunode, siteconf
from tfyarn.localyarn.layout import GPUS_PER_GPU_NODE, Layout, node_managers

H100_UUID = "GPU-3bf2767f-2fb6-945b-c28c-90e40aed6f44"
H100 = gpus.Gpu(0, H100_UUID, "NVIDIA H100 80GB HBM3", 81559, "00000000:00:06.0")


def node(count: int, host: str = "127.0.0.4") -> list[gpus.Gpu]:
    return [gpus.Gpu(g["index"], g["uuid"], g["name"], g["memory_total_mib"], g["bus_id"])
            for g in gpunode.gpu_identities(host, count)]


def q_x_gpus(text: str) -> list[gpus.Gpu]:
    """The GPUs of ``nvidia-smi -q -x`` (what YARN's GPU plugin reads), in its order; the
    recording's DTD is not shipped, so its DOCTYPE line is dropped first."""
    root = ET.fromstring(re.sub(r"<!DOCTYPE[^>]*>", "", text, count=1))
    return [gpus.Gpu(index, gpu.findtext("uuid", "").strip(),
                     gpu.findtext("product_name", "").strip(),
                     int(gpu.findtext("fb_memory_usage/total", "0").split()[0]),
                     gpu.findtext("pci/pci_bus_id", "").strip())
            for index, gpu in enumerate(root.findall("gpu"))]


def completed(stdout: str = "", code: int = 0, stderr: str = ""):
    def runner(command, **_):
        assert command[0] == "nvidia-smi"
        return subprocess.CompletedProcess(command, code, stdout, stderr)
    return runner


# ---------------------------------------------------------------- parsing what nvidia-smi says

def test_the_recorded_query_csv_with_header_and_units_parses() -> None:
    # index, uuid, name, memory.total [MiB], memory.used, utilization, pci.bus_id, driver
    text = gpunode.fixture("nvidia-smi-query.csv")
    assert gpus.parse_query_csv(text) == [H100]


def test_the_agents_own_query_without_header_or_units_parses() -> None:
    text = ("1, GPU-b, NVIDIA H100 80GB HBM3, 81559, 00000000:07:00.0\n"
            "0, GPU-a, NVIDIA H100 80GB HBM3, 81559, 00000000:06:00.0\n")
    assert [(g.index, g.uuid, g.memory_mib) for g in gpus.parse_query_csv(text)] == [
        (0, "GPU-a", 81559), (1, "GPU-b", 81559)]


def test_an_unreadable_line_is_an_error_not_a_guess() -> None:
    with pytest.raises(gpus.GpuError, match="cannot read"):
        gpus.parse_query_csv("0, GPU-a\n")


# ---------------------------------------------------------------- the stand-in nvidia-smi

@pytest.fixture
def stand_in(tmp_path: Path) -> Path:
    return gpunode.write_stand_in(tmp_path / "nm3", "127.0.0.4", 3)


def test_the_stand_in_makes_an_n_gpu_node_of_the_recording(stand_in: Path) -> None:
    xml = subprocess.run([stand_in, "-x", "-q"], capture_output=True, text=True, check=True)
    listed = q_x_gpus(xml.stdout)
    assert len(listed) == 3
    assert len({g.uuid for g in listed}) == len({g.bus_id for g in listed}) == 3
    assert "<attached_gpus>3</attached_gpus>" in xml.stdout
    assert [f"<minor_number>{k}</minor_number>" in xml.stdout for k in range(3)] == [True] * 3
    assert all(g.name == "NVIDIA H100 80GB HBM3" and g.memory_mib == 81559 for g in listed)
    query = subprocess.run([stand_in, *gpus.QUERY_COMMAND[1:]], capture_output=True, text=True,
                           check=True)
    assert gpus.parse_query_csv(query.stdout) == listed
    assert gpus.query(runner=lambda c, **kw: subprocess.run([stand_in, *c[1:]], **kw)) == listed
    short = subprocess.run([stand_in, "-L"], capture_output=True, text=True, check=True).stdout
    assert short.splitlines()[2] == f"GPU 2: NVIDIA H100 80GB HBM3 (UUID: {listed[2].uuid})"
    table = subprocess.run([stand_in], capture_output=True, text=True, check=True).stdout
    assert table.count("NVIDIA H100 80GB HBM3") == 3 and listed[2].bus_id in table
    # Another host's GPUs are other GPUs.
    assert {g.uuid for g in node(3, "127.0.0.5")}.isdisjoint(g.uuid for g in listed)


def test_the_stand_in_fails_as_nvidia_smi_does_without_a_driver(stand_in: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CONTAINER_ID"}
    (stand_in.parent.parent / "gpu" / "fail-in-containers").touch()
    assert subprocess.run([stand_in, "-L"], env=env, capture_output=True).returncode == 0
    in_container = subprocess.run([stand_in, "-L"], env={**env, "CONTAINER_ID": "c_1"},
                                  capture_output=True, text=True)
    assert in_container.returncode == 9
    (stand_in.parent.parent / "gpu" / "fail").touch()
    result = subprocess.run([stand_in, "-x", "-q"], env=env, capture_output=True, text=True)
    assert result.returncode == 9
    assert "couldn't communicate with the NVIDIA driver" in result.stdout


# ---------------------------------------------------------------- nvidia-smi missing or failing

def test_a_missing_nvidia_smi_is_said_and_nothing_guessed() -> None:
    def missing(command, **_):
        raise FileNotFoundError(2, "No such file or directory", command[0])

    with pytest.raises(gpus.GpuError, match="nvidia-smi is not on this container's PATH"):
        gpus.take(1, runner=missing)


def test_a_failing_nvidia_smi_is_said_with_its_words() -> None:
    with pytest.raises(gpus.GpuError, match=r"failed \(exit code 9\): NVIDIA-SMI has failed"):
        gpus.take(1, runner=completed(gpunode.DRIVER_FAILURE, code=9))


def test_a_task_without_gpus_needs_no_nvidia_smi_and_sees_none() -> None:
    def never(*_a, **_k):
        raise AssertionError("nvidia-smi run for a task that asked for no GPU")

    held = gpus.take(0, runner=never)
    assert held.environment() == {"CUDA_VISIBLE_DEVICES": ""}
    assert held.summary()["devices"] == [] and gpus.short_text(held.summary()) == "none"


def test_fewer_gpus_than_asked_is_an_error() -> None:
    with pytest.raises(gpus.GpuError, match="asked for 2 GPU"):
        gpus.hold(2, [H100])


# ---------------------------------------------------------------- who gets which

def test_tasks_on_one_node_hold_different_gpus_and_a_replacement_the_freed_one(
        tmp_path: Path) -> None:
    seen = node(2)
    first = gpus.hold(1, seen, tmp_path, wait_s=0)
    second = gpus.hold(1, seen, tmp_path, wait_s=0)
    assert first.gpus == [seen[0]] and second.gpus == [seen[1]]
    assert first.environment() == {"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert second.environment()["CUDA_VISIBLE_DEVICES"] == "1"
    assert not first.isolated  # it sees the node's two
    with pytest.raises(gpus.GpuError, match="stayed held by other tasks"):
        gpus.hold(1, seen, tmp_path, wait_s=0)
    second.release()  # its agent ended (the kernel drops the lock however it ends)
    replacement = gpus.hold(1, seen, tmp_path, wait_s=0)
    assert replacement.gpus == [seen[1]]


def test_a_lock_held_by_another_process_counts(tmp_path: Path) -> None:
    seen = node(2)
    script = ("import sys, time; from appmaster.common import gpus; "
              f"h = gpus.hold(1, gpus.parse_query_csv(sys.stdin.read()), {str(tmp_path)!r}, 0); "
              "print(h.environment()['CUDA_VISIBLE_DEVICES'], flush=True); time.sleep(30)")
    csv = "".join(f"{g.index}, {g.uuid}, {g.name}, {g.memory_mib}, {g.bus_id}\n" for g in seen)
    other = subprocess.Popen(["python3", "-c", script], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True,
                             cwd=Path(gpus.__file__).parents[2])
    try:
        other.stdin.write(csv)
        other.stdin.close()
        assert other.stdout.readline().strip() == "0"
        assert gpus.hold(1, seen, tmp_path, wait_s=0).gpus == [seen[1]]
    finally:
        other.kill()
        other.wait()
    assert gpus.hold(2, seen, tmp_path, wait_s=0).gpus == seen  # freed by its death


def test_a_container_that_sees_only_its_own_gpus_uses_them(tmp_path: Path) -> None:
    """Where YARN isolates (cgroups or Docker), nvidia-smi lists just the container's GPUs."""
    own = [gpus.Gpu(0, "GPU-x", "NVIDIA H100 80GB HBM3", 81559, "00000000:0A:00.0"),
           gpus.Gpu(1, "GPU-y", "NVIDIA H100 80GB HBM3", 81559, "00000000:0B:00.0")]
    csv = "".join(f"{g.index}, {g.uuid}, {g.name}, {g.memory_mib}, {g.bus_id}\n" for g in own)
    held = gpus.take(2, runner=completed(csv), lock_dir=tmp_path, wait_s=0)
    assert held.isolated and held.gpus == own
    assert held.environment()["CUDA_VISIBLE_DEVICES"] == "0,1"
    summary = held.summary()
    assert summary["devices"][1] == {"index": 1, "uuid": "GPU-y", "name": "NVIDIA H100 80GB HBM3",
                                     "memory_mib": 81559, "bus_id": "00000000:0B:00.0"}
    assert gpus.page_text(summary).startswith("GPU 0: NVIDIA H100 80GB HBM3, 81559 MiB (GPU-x…)")
    assert gpus.short_text({"error": "nvidia-smi failed"}) == "error"


# ---------------------------------------------------------------- the local cluster's settings

def test_only_the_gpu_node_runs_yarns_gpu_plugin_with_the_stand_in(tmp_path: Path) -> None:
    # 3.4 and later are given the stand-in itself; 3.3.x its directory (test_releases.py).
    layout = Layout(tmp_path, port_offset=0, nodes=3, gpus=4, hadoop_version="3.5.0")
    nms = layout.node_managers
    assert [nm.gpus for nm in nms] == [0, 0, 4]
    gpu_site = siteconf.node_manager_site(layout, nms[-1])
    stand_in = layout.node_dir(nms[-1]) / "bin" / "nvidia-smi"
    assert gpu_site["yarn.nodemanager.resource-plugins"] == "yarn.io/gpu"
    assert gpu_site["yarn.nodemanager.resource-plugins.gpu.path-to-discovery-executables"] \
        == stand_in
    assert gpu_site["yarn.nodemanager.resource-plugins.gpu.allowed-gpu-devices"] == "auto"
    assert f"PATH={stand_in.parent}:" in gpu_site["yarn.nodemanager.admin-env"]
    plain = siteconf.node_manager_site(layout, nms[0])
    assert "yarn.nodemanager.resource-plugins" not in plain
    assert "nm1/bin" not in plain["yarn.nodemanager.admin-env"]
    siteconf.write_configuration(layout)
    assert stand_in.is_file() and not (layout.node_dir(nms[0]) / "bin" / "nvidia-smi").exists()
    for nm in nms:  # the count comes from discovery, never from a configured number
        assert not (layout.node_conf_dir(nm) / "node-resources.xml").exists()
    types = (layout.conf_dir / "resource-types.xml").read_text()
    assert "<name>yarn.resource-types.yarn.io/gpu.maximum-allocation</name><value>4<" in types


def test_the_gpu_count_is_kept_in_the_state_dir(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("TFYARN_CLUSTER_GPUS", raising=False)
    assert Layout(tmp_path).gpu_count == GPUS_PER_GPU_NODE
    (tmp_path / "gpus").write_text("5\n")
    assert Layout(tmp_path).gpu_count == 5
    assert Layout(tmp_path, gpus=1).gpu_count == 1
    assert node_managers(2, gpus=3)[-1].gpus == 3


# ---------------------------------------------------------------- how they are shown

def gpu_view() -> dict:
    seen = node(2)
    held = gpus.GpuHold(1, [seen[1]], seen=2).summary()
    none = gpus.GpuHold(0).summary()
    row = {"address": "127.0.0.4:1", "container": "c", "yarn_container_id": "container_1",
           "node": "127.0.0.4:8142", "restarts": 0, "exit_code": None, "log_url": None,
           "mirror": None}
    return {"app_id": "application_1_1", "name": "job", "state": "RUNNING", "generation": 0,
            "updated": 1_700_000_000_000, "work_dir": "hdfs://x", "cluster_spec": None,
            "tensorboard": None, "tensorboard_url": None, "restarts": [], "phases": {},
            "tasks": [{**row, "role": "ps", "index": 0, "state": "running", "gpus": none},
                      {**row, "role": "worker", "index": 0, "state": "running", "gpus": held},
                      {**row, "role": "worker", "index": 1, "state": "failed",
                       "gpus": {"error": "nvidia-smi failed (exit code 9): no driver"}}]}


def test_status_shows_each_tasks_gpus() -> None:
    from appmaster.page.view import JobView
    from tfyarn.watch import jobview
    view = JobView.from_dict(gpu_view())
    table = jobview.format_table(view).splitlines()
    gpus_column = table[0].index("GPUS")
    assert [line[gpus_column:].split()[0] for line in table[1:]] == ["none", "1", "error"]
    uuid = view.tasks[1].gpus["devices"][0]["uuid"]
    assert jobview.gpu_lines(view) == [
        f"  worker 0: GPU 1: NVIDIA H100 80GB HBM3, 81559 MiB, {uuid} (held of the 2 its node "
        "shows)",
        "  worker 1: no GPUs: nvidia-smi failed (exit code 9): no driver"]


def test_the_job_page_shows_each_tasks_gpus() -> None:
    from appmaster.page import jobpage

    page = jobpage.tasks_html(gpu_view())
    assert "<th>gpus</th>" in page
    uuid = gpu_view()["tasks"][1]["gpus"]["devices"][0]["uuid"]
    assert f"GPU 1: NVIDIA H100 80GB HBM3, 81559 MiB ({uuid[:12]}…)" in page
    assert uuid in page  # on hover
    assert "failed: nvidia-smi failed (exit code 9): no driver" in page


def test_the_dry_run_says_each_gpu_roles_gpus_and_label(tmp_path: Path, monkeypatch) -> None:
    import json

    from click.testing import CliRunner

    from tfyarn.cli.main import main

    repo = Path(__file__).resolve().parent.parent
    resources = json.loads((repo / "resources.json").read_text())
    resources["components"]["worker"]["yarn.gpus"] = "2"
    (tmp_path / "resources.json").write_text(json.dumps(resources))
    app = json.loads((repo / "appConfig.json").read_text())
    app["global"]["site.global.user.scripts.dir"] = str(repo / "examples")
    (tmp_path / "appConfig.json").write_text(json.dumps(app))
    for name in ("HADOOP_CONF_DIR", "YARN_CONF_DIR"):  # no cluster: pre-flight skipped as asked
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(main, [
        "submit", "--resources", str(tmp_path / "resources.json"),
        "--app-config", str(tmp_path / "appConfig.json"), "--dry-run", "--skip-preflight"])
    assert result.exit_code == 0, result.output
    assert ("  GPUs: 2 yarn.io/gpu per task (4 in all) on node label gpu; each task's script "
            "gets its own in CUDA_VISIBLE_DEVICES") in result.output
    assert result.output.count("GPUs:") == 1  # the ps and the chief ask for none


def test_a_job_without_gpus_gets_no_gpu_column() -> None:
    from appmaster.page import jobpage
    from tfyarn.watch import jobview
    view = gpu_view()
    view["tasks"] = view["tasks"][:1]  # the ps alone: it asked for no GPU
    from appmaster.page.view import JobView

    assert "GPUS" not in jobview.format_table(JobView.from_dict(view))
    assert jobview.gpu_lines(JobView.from_dict(view)) == []
    assert "<th>gpus</th>" not in jobpage.tasks_html(view)


def test_each_process_of_a_container_sees_its_own_contiguous_share(tmp_path: Path) -> None:
    """yarn.processes.per.container: process i of P gets the i-th G/P of the held GPUs."""
    seen = node(8)
    held = gpus.hold(4, seen, tmp_path, wait_s=0)
    assert [held.process_environment(i, 2)["CUDA_VISIBLE_DEVICES"] for i in range(2)] == [
        "0,1", "2,3"]
    assert held.process_environment(3, 4) == {"CUDA_VISIBLE_DEVICES": "3",
                                              "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert gpus.GpuHold(0).process_environment(1, 2) == {"CUDA_VISIBLE_DEVICES": ""}
