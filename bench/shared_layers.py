"""Issue 37: what sharing the environment's layers between users adds to a later submit
(nothing changed), on the local YARN, for the environment running this script.

Three ways of shipping the same layers, each already on HDFS, interleaved for ``--rounds``
rounds: in the user's HDFS home (sharing off, the default), in the shared directory's own
subdirectory (on), and as another user who trusts the first and has no subdirectory of its
own (on, every layer someone else's). Prints each one's median seconds and HDFS calls.

    eval "$(tfyarn cluster env)"; python -m bench.shared_layers [--rounds 5]
"""

from __future__ import annotations

import argparse
import getpass
import os
import statistics
import time
from collections import Counter

from bench.common import log
from tfyarn.localyarn import hdfs as local_hdfs
from tfyarn.localyarn.layout import Layout, default_state_dir
from tfyarn.submission import envpack, layership

OTHER_USER = "tfyarn-bench-bob"
CALLS = ("get_file_info", "list_status", "mkdirs", "set_permission", "read", "create",
         "rename", "delete")


def count_calls(counter: Counter) -> None:
    """Every call of hdfs-native's client counted (one RPC each; a listing of up to 1,000
    entries is one)."""
    from hdfs_native import Client

    for name in CALLS:
        method = getattr(Client, name)

        def counted(self, *args, _method=method, _name=name, **kwargs):
            counter[_name] += 1
            return _method(self, *args, **kwargs)

        setattr(Client, name, counted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    layout = Layout(default_state_dir())
    shared = f"{layout.default_fs}{local_hdfs.SHARED_LAYERS_DIR}"
    me = getpass.getuser()
    source = envpack.current_env()
    counter: Counter = Counter()
    count_calls(counter)
    ways = {
        "off (home)": (None, None, None),
        f"on, {me}'s own": (None, shared, None),
        f"on, {OTHER_USER} trusting {me}": (OTHER_USER, shared, (me,)),
    }
    seconds: dict[str, list[float]] = {way: [] for way in ways}
    calls: dict[str, Counter] = {}
    for user, url, trusted in ways.values():  # every layer there first, as this user
        if user is None:
            layership.ship(source, log, shared_url=url, trusted=trusted)
    for _ in range(args.rounds):
        for way, (user, url, trusted) in ways.items():
            os.environ.pop("HADOOP_USER_NAME", None)
            if user:
                os.environ["HADOOP_USER_NAME"] = user
            counter.clear()
            started = time.monotonic()
            shipped = layership.ship(source, lambda _: None, shared_url=url, trusted=trusted)
            seconds[way].append(time.monotonic() - started)
            assert not shipped.uploaded, (way, shipped.uploaded)
            calls[way] = Counter(counter)
    os.environ.pop("HADOOP_USER_NAME", None)
    for way in ways:
        figures = ", ".join(f"{s:.2f}" for s in seconds[way])
        log(f"{way}: median {statistics.median(seconds[way]):.2f} s ({figures}); HDFS calls "
            f"{sum(calls[way].values())}: {dict(sorted(calls[way].items()))}")


if __name__ == "__main__":
    main()
