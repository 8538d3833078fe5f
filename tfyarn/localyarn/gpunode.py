"""The gpu NodeManager's GPUs: a stand-in `nvidia-smi` replaying what a real GPU node prints.

The recording (nvidia_smi_h100/, from a machine with one NVIDIA H100 80GB, driver 580) is
multiplied into an N-GPU node: each GPU gets its own minor number, UUID and PCI bus id. YARN's
GPU plugin discovers them by running the stand-in (`nvidia-smi -q -x`), and the node's
containers find the same stand-in on their PATH, so a task sees its node's GPUs as it would
on a real node without isolation.

The stand-in answers `nvidia-smi -q -x`, `nvidia-smi -L`, `nvidia-smi` and
`nvidia-smi --query-gpu=<fields> --format=csv[,noheader][,nounits]`. For fault tests, it fails
as nvidia-smi does when it cannot reach the driver (exit code 9) while a file named `fail`
lies beside its data (``<node dir>/gpu/fail``), or only in containers (the NodeManager's own
runs still succeed) while one named `fail-in-containers` does. The NodeManager runs it every
3 s (GPU utilization) and gives up on discovery for good after 10 failures in a row.
"""

from __future__ import annotations

import hashlib
import json
import re
from importlib import resources
from pathlib import Path

FIXTURE_PACKAGE = "tfyarn.localyarn"
FIXTURE_DIR = "nvidia_smi_h100"
DRIVER_FAILURE = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                  "Make sure that the latest NVIDIA driver is installed and running.")


def fixture(name: str) -> str:
    return resources.files(FIXTURE_PACKAGE).joinpath(FIXTURE_DIR, name).read_text()


def gpu_identities(host: str, count: int) -> list[dict]:
    """Distinct minor numbers, UUIDs and bus ids for the node's GPUs (stable per host)."""
    row = fixture("nvidia-smi-query.csv").splitlines()[1].split(", ")
    name, memory_total, driver = row[2], row[3].split()[0], row[7]
    out = []
    for k in range(count):
        digest = hashlib.sha256(f"tfyarn-gpu/{host}/{k}".encode()).hexdigest()
        uuid = f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
        out.append({"index": k, "minor": k, "uuid": uuid, "name": name,
                    "memory_total_mib": int(memory_total), "memory_used_mib": 0,
                    "utilization": 0, "bus_id": f"00000000:{0x06 + k:02X}:00.0",
                    "pci_bus": f"{0x06 + k:02X}", "driver_version": driver})
    return out


def q_x_xml(gpus: list[dict]) -> str:
    """`nvidia-smi -q -x` of the node: the recorded GPU block once per GPU."""
    text = fixture("nvidia-smi-q-x.xml")
    start = text.index("\t<gpu id=")
    end = text.index("\t</gpu>\n", start) + len("\t</gpu>\n")
    block = text[start:end]
    original_bus = re.search(r'<gpu id="([^"]+)"', block).group(1)
    blocks = []
    for gpu in gpus:
        one = block.replace(original_bus, gpu["bus_id"])
        one = re.sub(r"<uuid>[^<]*</uuid>", f"<uuid>{gpu['uuid']}</uuid>", one)
        one = re.sub(r"<minor_number>\d+</minor_number>",
                     f"<minor_number>{gpu['minor']}</minor_number>", one)
        one = re.sub(r"<pci_bus>[^<]*</pci_bus>", f"<pci_bus>{gpu['pci_bus']}</pci_bus>", one)
        one = re.sub(r"<serial>(\d+)</serial>",
                     lambda m, k=gpu["index"]: f"<serial>{int(m.group(1)) + k}</serial>", one)
        blocks.append(one)
    text = text[:start] + "".join(blocks) + text[end:]
    return re.sub(r"<attached_gpus>\d+</attached_gpus>",
                  f"<attached_gpus>{len(gpus)}</attached_gpus>", text)


def listing(gpus: list[dict]) -> str:
    """`nvidia-smi -L`."""
    return "".join(f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})\n" for g in gpus)


def summary_table(gpus: list[dict]) -> str:
    """Plain `nvidia-smi`: the recorded table with one three-line block per GPU."""
    lines = fixture("nvidia-smi.txt").splitlines()
    first = next(i for i, line in enumerate(lines) if re.match(r"\|\s+0\s+NVIDIA", line))
    block, out = lines[first:first + 3], []
    original_bus = re.search(r"(\w{8}:\w\w:\w\w\.\w)", block[0]).group(1)
    for k, gpu in enumerate(gpus):
        if k:
            out.append(lines[first + 3])  # the separator line between GPUs
        out.append(block[0].replace("|   0  ", f"| {gpu['index']:>3}  ", 1)
                   .replace(original_bus, gpu["bus_id"]))
        out += block[1:]
    return "\n".join(lines[:first] + out + lines[first + 3:]) + "\n"


SYSTEM_PYTHON = "/usr/bin/python3"  # what every node has, as a real cluster's nodes do
STAND_IN = '''#!{python}
"""A stand-in for nvidia-smi on tfyarn's local cluster: replays a recorded GPU node
({count} GPU(s)). Written by tfyarn/localyarn/gpunode.py; data in {data}."""
import json, os, sys
from pathlib import Path

DATA = Path({data!r})
args = sys.argv[1:]
if (DATA / "fail").exists() or (
        (DATA / "fail-in-containers").exists() and "CONTAINER_ID" in os.environ):
    print({failure!r})
    sys.exit(9)
gpus = json.loads((DATA / "gpus.json").read_text())
if ("-q" in args or "--query" in args) and ("-x" in args or "--xml-format" in args):
    sys.stdout.write((DATA / "nvidia-smi-q-x.xml").read_text())
elif "-L" in args or "--list-gpus" in args:
    sys.stdout.write((DATA / "nvidia-smi-L.txt").read_text())
elif any(a.startswith("--query-gpu=") for a in args):
    fields = next(a for a in args if a.startswith("--query-gpu=")).split("=", 1)[1].split(",")
    form = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), "")
    if "csv" not in form:
        print("Please specify the output format with --format=csv")
        sys.exit(2)
    units = {{"memory.total": " MiB", "memory.used": " MiB", "memory.free": " MiB",
              "utilization.gpu": " %"}}
    names = {{"memory.total": "memory.total [MiB]", "memory.used": "memory.used [MiB]",
              "memory.free": "memory.free [MiB]", "utilization.gpu": "utilization.gpu [%]"}}
    def value(gpu, name):
        table = {{"index": gpu["index"], "uuid": gpu["uuid"], "name": gpu["name"],
                  "gpu_name": gpu["name"], "memory.total": gpu["memory_total_mib"],
                  "memory.used": gpu["memory_used_mib"],
                  "memory.free": gpu["memory_total_mib"] - gpu["memory_used_mib"],
                  "utilization.gpu": gpu["utilization"], "pci.bus_id": gpu["bus_id"],
                  "driver_version": gpu["driver_version"], "minor_number": gpu["minor"],
                  "count": len(gpus)}}
        if name not in table:
            print(f'Field "{{name}}" is not a valid field to query.')
            sys.exit(2)
        return str(table[name]) + ("" if "nounits" in form else units.get(name, ""))
    if "noheader" not in form:
        print(", ".join(n if "nounits" in form else names.get(n, n) for n in fields))
    for gpu in gpus:
        print(", ".join(value(gpu, n.strip()) for n in fields))
elif not args:
    sys.stdout.write((DATA / "nvidia-smi.txt").read_text())
else:
    print(f"tfyarn's stand-in nvidia-smi does not answer {{' '.join(args)}}", file=sys.stderr)
    sys.exit(2)
'''


def write_stand_in(node_dir: Path, host: str, count: int) -> Path:
    """Write ``<node dir>/gpu/`` (the node's recorded answers) and ``<node dir>/bin/nvidia-smi``;
    returns the stand-in's path. YARN's plugin insists the executable is named nvidia-smi."""
    data, bin_dir = node_dir / "gpu", node_dir / "bin"
    data.mkdir(parents=True, exist_ok=True)
    bin_dir.mkdir(parents=True, exist_ok=True)
    gpus = gpu_identities(host, count)
    (data / "gpus.json").write_text(json.dumps(gpus, indent=1))
    (data / "nvidia-smi-q-x.xml").write_text(q_x_xml(gpus))
    (data / "nvidia-smi-L.txt").write_text(listing(gpus))
    (data / "nvidia-smi.txt").write_text(summary_table(gpus))
    stand_in = bin_dir / "nvidia-smi"
    # The node's own Python: the NodeManager and the containers run it on a bare node.
    stand_in.write_text(STAND_IN.format(python=SYSTEM_PYTHON, data=str(data), count=count,
                                        failure=DRIVER_FAILURE))
    stand_in.chmod(0o755)
    return stand_in
