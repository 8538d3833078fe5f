"""`tfyarn env prune`: your environment layers on the cluster that no job used for N days,
deleted (or, by default, only listed with the bytes they hold). Which ones: layeruse.py."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from tfyarn.submission import layeruse
from tfyarn.submission.environments import JobEnvironmentError, cache_url, cluster_user
from tfyarn.submission.sharedlayers import qualified

# Every state in which an application may still localize or use its files.
LIVE_STATES = ["NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING"]


@dataclass(frozen=True)
class Place:
    """One directory of layers to prune: the listing's root, and where in it the
    writer's layers are."""

    url: str
    area: str  # "" or "<writer>/"


def places(me: str, shared_url: str | None, echo: Callable[[str], None]) -> list[Place]:
    """Your HDFS home's layers; with a shared directory you own, your subdirectory of it
    (others' subdirectories are theirs: never touched)."""
    from appmaster.common.storage import RemoteDir, bounded

    found = [Place(cache_url("").rstrip("/"), "")]
    if shared_url:
        url = qualified(shared_url)
        owner = bounded(lambda: RemoteDir(url).client.get_file_info(RemoteDir(url).root).owner,
                        what=f"HDFS ({url})")
        if owner == me:
            found.append(Place(url, f"{me}/"))
        else:
            echo(f"{url} is pruned by its owner, {owner}: your layers there are left as they "
                 "are.")
    return found


def running_since() -> dict[str, float]:
    """Each user with a live application: when their oldest one was submitted."""
    from tfyarn.hadoop.rmrest import reports_reader

    reader = reports_reader()
    if reader is None:
        raise JobEnvironmentError(
            "the ResourceManager did not answer: which jobs run, and so which layers they "
            "use, is not known.", hint="run it again once the ResourceManager's web "
            "address (yarn-site.xml) answers; nothing was deleted.")
    with reader:
        apps = reader.get_applications(LIVE_STATES)
    since: dict[str, float] = {}
    for app in apps:
        started = app.start_time.timestamp() if app.start_time else 0.0
        since[app.user] = min(since.get(app.user, started), started)
    return since


def prune(older_than_days: float, apply: bool, shared_url: str | None,
          echo: Callable[[str], None] = print) -> int:
    """Your layers to prune, listed (or, with ``apply``, deleted); the bytes they hold."""
    me = cluster_user()
    return prune_places(places(me, shared_url, echo), me, older_than_days, apply,
                        running_since(), echo)


def prune_places(where: list[Place], me: str, older_than_days: float, apply: bool,
                 live: dict[str, float], echo: Callable[[str], None]) -> int:
    from appmaster.common.storage import RemoteDir, bounded

    total = 0
    verb = "deleted" if apply else "would delete"
    for place in where:
        remote = RemoteDir(place.url)
        files = bounded(remote.list_files, what=f"HDFS ({place.url})")
        pruning = layeruse.plan(files, me, place.area, older_than_days, live, time.time())
        for path, size in pruning.delete:
            if apply:  # the layer first: a record alone is never read
                bounded(lambda r=remote, p=path: (r.delete(p),
                                                  r.delete(p + layeruse.RECORD_SUFFIX)),
                        what=f"HDFS ({place.url})")
            echo(f"  {verb} {place.url}/{path} ({size:,} bytes)")
        echo(f"{place.url}/{place.area}: {verb} {len(pruning.delete)} layer(s), "
             f"{pruning.bytes_freed:,} bytes; kept {len(pruning.kept_recent)} used in the last "
             f"{older_than_days:g} days and {len(pruning.kept_running)} a running job may use")
        total += pruning.bytes_freed
    if not apply and total:
        echo("Nothing was deleted (a dry run): add --yes to delete them.")
    return total
