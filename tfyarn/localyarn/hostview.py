"""Give one NodeManager a file system of its own, as if it were another machine.

On a real cluster a node has its operating system, the JDK, Hadoop and the cluster's
configuration, its own NodeManager directories and disks, and what an administrator installed
on every node; nothing of another node's disks, and nothing of the user's machine. Only HDFS
is shared. The local cluster builds each node's view that way, by construction rather than by
hiding a list of paths: each NodeManager starts in its own mount namespace (``unshare
--mount``), where this module takes an empty directory of the node's own (``<node dir>/host``,
its "root disk"), binds into it only what a node has, at the same paths as outside, then makes
it the root (pivot_root, the old root detached) and becomes the NodeManager. Every container
it starts inherits that view:

- the operating system: /usr, /etc and the other parts of the host's root that hold it
  (read-only; usr-merged links such as /bin -> usr/bin copied as links), /proc, /sys and
  /dev as the host has them, and a /dev/shm of the node's own;
- the JDK and the Hadoop jars, the cluster's configuration, its launchers (``bin/``), the
  NodeManager's own configuration, on the gpu node its stand-in nvidia-smi and its data,
  ``node-software/`` (what an administrator installs at one path on every node) and, on the
  secure cluster, the krb5.conf and the keytabs a NodeManager logs in with: read-only;
- the node's own NodeManager directories (local, containers, tmp) and its daemon log:
  writable.

Anything else a task writes (/tmp, /var/tmp, HOME, /run, any other path) lands on the node's
own root disk, which the client sees as ``<node dir>/host/<path>``; other nodes' directories,
the rest of the state dir, /srv, /opt, /data, /work, any checkout or virtualenv are absent.

Run as ``unshare ... python -m tfyarn.localyarn.hostview ROOT --read-only PATH...
--writable DIR... --files FILE... -- COMMAND...``.
"""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tfyarn.localyarn import secure
from tfyarn.localyarn.layout import Layout, NodeManagerSpec

MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MNT_DETACH = 2
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "ppc64le": 203, "s390x": 217}

# The parts of the host's root that hold the operating system (links or directories).
OS_PARTS = ("usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
KERNEL_PARTS = ("proc", "sys", "dev")


def own_dirs() -> dict[Path, int]:
    """Empty directories of the node's own that every machine has, with their modes."""
    return {Path("/tmp"): 0o1777, Path("/var/tmp"): 0o1777, Path("/run"): 0o755,
            Path.home(): 0o700}


@dataclass(frozen=True)
class NodeView:
    """What one node sees besides its operating system, at the same paths as outside."""

    root: Path  # the node's own root disk
    read_only: tuple[Path, ...]
    writable: tuple[Path, ...]  # directories, made where missing
    files: tuple[Path, ...]  # writable files, made empty where missing

    def command(self) -> tuple[str, ...]:
        """python -m tfyarn.localyarn.hostview ... --: run what follows in this view."""
        return (sys.executable, "-m", "tfyarn.localyarn.hostview", str(self.root),
                "--read-only", *map(str, self.read_only), "--writable",
                *map(str, self.writable), "--files", *map(str, self.files), "--")


def node_view(layout: Layout, nm: NodeManagerSpec, java_home: Path) -> NodeView:
    """A node of this cluster: the cluster's software and configuration, and its own dirs."""
    node_dir = layout.node_dir(nm)
    layout.node_software_dir.mkdir(parents=True, exist_ok=True)  # an administrator's, later
    read_only = [java_home, layout.hadoop_home, layout.conf_dir, layout.bin_dir,
                 layout.node_software_dir, layout.node_conf_dir(nm)]
    # the gpu node's stand-in nvidia-smi and its data (gpunode.py)
    read_only += [p for p in (node_dir / "bin", node_dir / "gpu") if p.is_dir()]
    if secure.is_secure(layout):  # what a NodeManager logs in with (secure.yarn_site)
        read_only += [layout.krb5_conf, secure.keytab(layout, "yarn"),
                      secure.keytab(layout, "HTTP")]
    return NodeView(root=layout.host_view_dir(nm), read_only=tuple(read_only),
                    writable=(node_dir / "local", node_dir / "containers", node_dir / "tmp"),
                    files=(layout.daemon_log(nm.name),))


def unshare_prefix() -> list[str] | None:
    """The command that starts a process in a mount namespace of its own, or None.

    root can create one directly; another user needs a user namespace around it.
    """
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    base = [unshare, "--mount", "--propagation", "private"]
    prefix = base if os.geteuid() == 0 else [unshare, "--user", "--map-current-user",
                                             *base[1:]]
    works = subprocess.run([*prefix, "true"], capture_output=True)
    return prefix if works.returncode == 0 else None


_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source: str | None, target: Path, flags: int, fstype: str | None = None,
           data: str | None = None) -> None:
    _check(_libc.mount(source.encode() if source else None, str(target).encode(),
                       fstype.encode() if fstype else None, flags,
                       data.encode() if data else None), f"mount {source} -> {target}")


def _bind(source: Path, target: Path, *, writable: bool) -> None:
    _mount(str(source), target, MS_BIND | MS_REC)
    if not writable:  # a bind takes its flags from a remount
        _mount(None, target, MS_BIND | MS_REMOUNT | MS_RDONLY)


def _inside(root: Path, path: Path) -> Path:
    return root / str(path).lstrip("/")


def _add(root: Path, source: Path, *, writable: bool) -> None:
    """Bind ``source`` at its own path inside ``root``, making the mount point."""
    target = _inside(root, source)
    if source.is_dir():
        target.mkdir(parents=True, exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
    _bind(source, target, writable=writable)


def _add_system(root: Path) -> None:
    """The operating system, the kernel's file systems, and a /dev/shm of the node's own."""
    for name in OS_PARTS:
        host, target = Path("/", name), root / name
        if host.is_symlink():  # usr-merged: /bin -> usr/bin
            if target.is_symlink() and os.readlink(target) == os.readlink(host):
                continue
            if target.is_symlink():
                target.unlink()
            elif target.is_dir():
                target.rmdir()  # an empty mount point of an earlier view
            target.symlink_to(os.readlink(host))
        elif host.is_dir():
            target.mkdir(exist_ok=True)
            _bind(host, target, writable=False)
    for name in KERNEL_PARTS:
        (root / name).mkdir(exist_ok=True)
        _bind(Path("/", name), root / name, writable=True)
    if (root / "dev" / "shm").is_dir():
        _mount("tmpfs", root / "dev" / "shm", 0, "tmpfs", "mode=1777")


def _visible_already(path: Path) -> bool:
    """Under a part of the OS bound whole (a JDK in /usr/lib/jvm)."""
    return any(part == path.parts[1] for part in OS_PARTS if len(path.parts) > 1)


def enter(view: NodeView) -> None:
    """In the current (already private) mount namespace: build the view, make it the root."""
    root = view.root
    root.mkdir(parents=True, exist_ok=True)
    _mount(str(root), root, MS_BIND)  # pivot_root wants the new root to be a mount point
    _add_system(root)
    for path, mode in own_dirs().items():
        own = _inside(root, path)
        own.mkdir(parents=True, exist_ok=True)
        own.chmod(mode)
    for path in sorted(view.read_only):  # parents before children
        if path.exists() and not _visible_already(path):
            _add(root, path, writable=False)
    for path in sorted(view.writable):
        path.mkdir(parents=True, exist_ok=True)
        _add(root, path, writable=True)
    for path in view.files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        _add(root, path, writable=True)
    cwd = os.getcwd()
    os.chdir(root)
    # pivot_root(".", ".") stacks the old root on the new one; detaching it leaves the view.
    _check(_libc.syscall(PIVOT_ROOT[platform.machine()], b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", MNT_DETACH), "detach the host's root")
    os.chdir(cwd if os.path.isdir(cwd) else "/")


def parse(argv: list[str]) -> tuple[NodeView, list[str]]:
    split = argv.index("--")
    head, command = argv[:split], argv[split + 1:]
    groups: dict[str, list[Path]] = {"--read-only": [], "--writable": [], "--files": []}
    current = None
    for arg in head[1:]:
        if arg in groups:
            current = groups[arg]
        elif current is None:
            raise SystemExit(f"hostview: {arg} before --read-only/--writable/--files")
        else:
            current.append(Path(arg))
    return NodeView(Path(head[0]), tuple(groups["--read-only"]), tuple(groups["--writable"]),
                    tuple(groups["--files"])), command


def main(argv: list[str]) -> None:
    view, command = parse(argv)
    enter(view)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
