"""Give one NodeManager a file system view of its own, as if it were another machine.

On a real cluster a file a task writes to /tmp or to its HOME on one node is not there on
another node: only HDFS is shared. The local cluster reproduces that. Each NodeManager starts
in its own mount namespace (``unshare --mount``), where this module bind-mounts the node's
own directories over the paths that hosts do not share (/tmp and the user's HOME), then
becomes the NodeManager. Every container it starts inherits that view.

A node is as bare as a real one: the submitting user's software is hidden too, since no
real node has it. The Python running tfyarn (its virtualenv and the installation it was made
from) and tfyarn's checkout show the node's own empty directories, so a container sees the
machine's system Python (/usr/bin/python3, without TensorFlow or skein) and the cluster's
own software: the cluster's state dir (configuration, launchers, the NodeManagers' local
and log dirs, and ``node-software/``, what an administrator installs at one path on every
node), the Hadoop jars and the JDK, bound back at their usual paths.

Run as ``unshare ... python -m tfyarn.localyarn.hostview VIEW_DIR PRIVATE... --keep KEEP...
-- COMMAND...``.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path

MS_BIND = 4096
MS_REC = 16384


def private_paths() -> list[Path]:
    """What hosts never share: /tmp (and so every default TMPDIR) and the user's HOME."""
    return [Path("/tmp"), Path.home()]


SYSTEM_PREFIXES = (Path("/usr"), Path("/usr/local"), Path("/"))


def user_software() -> list[Path]:
    """What the submitting user installed, which no node of a real cluster has: the Python
    running tfyarn (a virtualenv, and a pyenv or conda installation it came from; not the
    system's own) and tfyarn's checkout when it runs from one."""
    import tfyarn

    found = [Path(sys.prefix), Path(sys.base_prefix)]
    package = Path(tfyarn.__file__).resolve().parent
    if "site-packages" not in package.parts:  # an editable install: the checkout
        found.append(package.parent)
    # nested ones (a venv inside the checkout) are hidden with the outer one (enter)
    return sorted({p.resolve() for p in found} - set(SYSTEM_PREFIXES))


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


def _bind(source: str, target: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(source.encode(), str(target).encode(), None, MS_BIND | MS_REC, None) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"bind mount {source} -> {target}: {os.strerror(errno)}")


def _is_under(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def enter(view_dir: Path, private: list[Path], keep: list[Path]) -> None:
    """In the current (already private) mount namespace: each private path now shows the
    node's own directory under ``view_dir``; each kept path shows what it showed before."""
    # Opened before anything is hidden, then bound back through /proc/self/fd.
    held = {path: os.open(path, os.O_PATH | os.O_DIRECTORY)
            for path in keep if path.is_dir() and any(_is_under(path, p) for p in private)}
    # view_dir too: under a private path itself (a state dir in /tmp), its name would lead
    # into the node's own directory once that path is bound.
    view_dir.mkdir(parents=True, exist_ok=True)
    view_fd = os.open(view_dir, os.O_PATH | os.O_DIRECTORY)
    view = Path(f"/proc/self/fd/{view_fd}")
    for path in private:
        if any(_is_under(path, other) for other in private if other != path):
            continue  # hidden with the directory it is in
        own = view / str(path).lstrip("/")
        own.mkdir(parents=True, exist_ok=True)
        if path == Path("/tmp"):
            own.chmod(0o1777)
        _bind(str(own), path)
    os.close(view_fd)  # not passed on to the NodeManager
    for path, fd in sorted(held.items()):  # parents before children
        path.mkdir(parents=True, exist_ok=True)
        _bind(f"/proc/self/fd/{fd}", path)
        os.close(fd)


def main(argv: list[str]) -> None:
    split = argv.index("--")
    head, command = argv[:split], argv[split + 1:]
    keep_at = head.index("--keep")
    view_dir, *private = (Path(a) for a in head[:keep_at])
    keep = [Path(a) for a in head[keep_at + 1:]]
    enter(view_dir, private, keep)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
