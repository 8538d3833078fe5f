"""`tfyarn env prune` on the real HDFS and ResourceManager: an old layer removed, one used
lately kept, one a running job may use kept, another user's untouched, and the dry run's
numbers what the deletion frees."""

from __future__ import annotations

import getpass
import time
import uuid

import pytest
from test_shared_layers_yarn import as_user

from appmaster.common.storage import RemoteDir
from tfyarn.localyarn import hdfs as local_hdfs
from tfyarn.submission import envprune, layeruse

pytestmark = pytest.mark.yarn

BOB, CAROL = "tfyarn-test-bob", "tfyarn-test-carol"
DAY_MS = 86_400_000
MINUTE_DAYS = 1 / 24 / 60
OLDER_THAN_DAYS = 30 * MINUTE_DAYS


def record_size(size: int) -> int:
    return len(b'{"size": %d}' % size)


def put_layer(admin, root: str, path: str, size: int, used_days_ago: float,
              owner: str) -> None:
    """A layer and its record, the record last used ``used_days_ago``."""
    for name, data in ((path, b"l" * size), (path + ".json", b'{"size": %d}' % size)):
        with admin.create(f"{root}/{name}") as writer:
            writer.write(data)
        admin.set_owner(f"{root}/{name}", owner)
    when = int(time.time() * 1000 - used_days_ago * DAY_MS)
    admin.set_times(f"{root}/{path}.json", when, when)


def test_prune_keeps_what_is_used_and_frees_what_it_says(yarn_cluster, skein_client,
                                                         monkeypatch: pytest.MonkeyPatch):
    import skein

    me = getpass.getuser()  # HDFS's superuser here, owner of both directories
    admin = local_hdfs.client(yarn_cluster.layout)
    base = f"/tmp/prune-{uuid.uuid4().hex[:8]}"
    home, shared = f"{base}/home", f"{base}/shared"
    fs = yarn_cluster.layout.default_fs
    put_layer(admin, home, "layer-old.tar", 3000, 40, me)
    put_layer(admin, home, "layer-recent.tar", 5000, MINUTE_DAYS * 10, me)
    put_layer(admin, home, "layer-running.tar", 7000, MINUTE_DAYS * 40, me)
    put_layer(admin, shared, f"{me}/layer-a.tar", 11000, 40, me)  # carol used it lately
    put_layer(admin, shared, f"{me}/layer-b.tar", 13000, 40, me)
    put_layer(admin, shared, f"{BOB}/layer-c.tar", 17000, 400, BOB)  # another user's
    admin.set_owner(f"{shared}/{BOB}", BOB)
    admin.set_permission(shared, 0o1777)  # as the cluster's shared directory
    as_user(monkeypatch, CAROL)  # carol's submit used my layer a: a marker in her subdir
    layeruse.record(RemoteDir(f"{fs}{shared}"), CAROL, [f"{me}/layer-a.tar"], shared=True,
                    known={}, echo=print)
    as_user(monkeypatch, None)
    assert admin.get_file_info(f"{shared}/{CAROL}/.used/{me}/layer-a.tar").owner == CAROL
    # A job of mine is live: what I used since an hour before it was submitted stays.
    app = skein_client.submit(skein.ApplicationSpec(
        name="prune-holder", master=skein.Master(
            resources=skein.Resources(memory=256, vcores=1), script="sleep 300")))
    places = [envprune.Place(f"{fs}{home}", ""), envprune.Place(f"{fs}{shared}", f"{me}/")]
    try:
        live = envprune.running_since()
        assert me in live
        lines: list[str] = []
        started = time.monotonic()
        unprotected: list[str] = []  # were no job of mine live
        envprune.prune_places(places, me, OLDER_THAN_DAYS, False, {}, unprotected.append)
        dry = envprune.prune_places(places, me, OLDER_THAN_DAYS, False, live, lines.append)
        print(f"\nprune's dry run: {time.monotonic() - started:.2f} s\n" + "\n".join(lines))
        before = admin.get_content_summary(base).length
        freed = envprune.prune_places(places, me, OLDER_THAN_DAYS, True, live, print)
        after = admin.get_content_summary(base).length
    finally:
        skein_client.kill_application(app)
    assert dry == freed == before - after == 3000 + 13000 + record_size(3000) + record_size(
        13000), (dry, freed, before - after)
    assert any("would delete" in line and "layer-old.tar" in line for line in lines), lines
    assert not any("layer-running" in line for line in lines), lines
    assert any("would delete" in line and "layer-running" in line for line in unprotected)
    remaining = {s.path for s in admin.list_status(base, recursive=True)}
    for gone in ("home/layer-old.tar", "home/layer-old.tar.json", f"shared/{me}/layer-b.tar"):
        assert f"{base}/{gone}" not in remaining
    for kept in ("home/layer-recent.tar", "home/layer-running.tar", f"shared/{me}/layer-a.tar",
                 f"shared/{BOB}/layer-c.tar", f"shared/{BOB}/layer-c.tar.json"):
        assert f"{base}/{kept}" in remaining, kept
    admin.delete(base, recursive=True)
