"""The secure local cluster (`tfyarn cluster up --secure`): Kerberos end to end.

A cluster of its own (state dir and port offset beside the plain one the other tests share),
started once for this file. Nothing here is skipped: on a machine without what the secure
cluster needs (MIT's kinit, which scripts/setup.sh installs; Maven Central for MiniKdc) the
fixture fails, saying what is missing.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest
import requests
from barenodes import venv_without
from conftest import LocalCluster, chromium, open_page, task_rows
from jobtools import (
    ONE_WORKER,
    SUBMIT_TIMEOUT_S,
    TFYARN,
    app_report,
    app_state,
    application_ids,
    prepare_job,
    prepare_light_job,
    run_tfyarn,
    submit_and_wait,
    task_processes,
    wait_for,
)

from appmaster.common import hdfstokens
from appmaster.common.hadoopxml import site_value
from tfyarn.localyarn import cluster, secure
from tfyarn.localyarn.layout import Layout, default_state_dir
from tfyarn.security import spnego
from tfyarn.security.kerberos import keytab_entries
from tfyarn.watch import jobview

pytestmark = [pytest.mark.yarn, pytest.mark.xdist_group("offset-2700")]  # one lane: same ports

# Ports shift by this offset: away from the plain cluster's (0 by default, 300 apart for more).
PORT_OFFSET = int(os.environ.get("TFYARN_SECURE_CLUSTER_PORT_OFFSET", "2700"))
REFUSED = "Client cannot authenticate via:[TOKEN, KERBEROS]"
FINAL = ("FINISHED", "FAILED", "KILLED")


@pytest.fixture(scope="module")
def secure_cluster() -> Iterator[LocalCluster]:
    """Start the secure cluster for this module's tests (or reuse a running one) and stop
    what was started once they end, not at the end of the lane's session.

    Its bare nodes run the jobs with a Python installed on every node, with TensorFlow (the
    "every node has this interpreter" mode), given as a personal defaults file: a shipped
    env's first localization on a node here takes longer than the minute its delegation
    tokens last unrenewed (a chmod forked per file without libhadoop.so), and the shipped
    mode is the plain cluster's tests' own."""
    state_dir = Path(os.environ.get("TFYARN_SECURE_CLUSTER_DIR")
                     or f"{default_state_dir()}-secure")
    layout = Layout(state_dir, port_offset=PORT_OFFSET)
    started_here = not cluster.is_running(layout)
    if started_here:
        cluster.up(layout, kerberos=True, probe=False)  # its tests run jobs at once
    assert secure.is_secure(layout), f"{state_dir} runs a cluster without Kerberos"
    try:
        python = venv_without(layout, "python-tf", ())
        defaults = layout.state_dir / "tests-defaults.yaml"
        defaults.write_text(f"site.global.python: {python}\n")
        env = {**cluster.client_environment(layout), "TFYARN_CONFIG": str(defaults)}
        yield LocalCluster(layout, env)
    finally:
        if started_here:
            cluster.down(layout)


def without_tickets(secure_cluster: LocalCluster, tmp_path: Path) -> dict[str, str]:
    """The client environment with an empty ticket cache: nobody is logged in."""
    return {**secure_cluster.env, "KRB5CCNAME": str(tmp_path / "no-tickets")}


def run(env: dict[str, str], *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def hdfs_listing(secure_cluster: LocalCluster, path: str) -> str:
    listing = run(secure_cluster.env, "hdfs", "dfs", "-ls", "-R", path)
    assert listing.returncode == 0, listing.stderr[-2000:]
    return listing.stdout


def test_cluster_env_gives_a_ticket_cache(secure_cluster: LocalCluster) -> None:
    env = secure_cluster.env
    assert env["KRB5_CONFIG"] == str(secure_cluster.layout.krb5_conf)
    tickets = run(env, "klist")
    assert tickets.returncode == 0, tickets.stderr
    assert f"Default principal: {secure.principal(secure.cluster_user())}" in tickets.stdout
    assert "/user" in hdfs_listing(secure_cluster, "/")


def test_a_client_without_tickets_is_refused(secure_cluster: LocalCluster,
                                             tmp_path: Path) -> None:
    env = without_tickets(secure_cluster, tmp_path)
    for command in (("yarn", "application", "-list"), ("hdfs", "dfs", "-ls", "/")):
        refused = run(env, *command)
        assert refused.returncode != 0 and REFUSED in refused.stderr, (command, refused.stderr)
    # Every web UI and REST API wants SPNEGO; with no ticket tfyarn says so before asking.
    layout = secure_cluster.layout
    for url in (f"{layout.webapp_url}/ws/v1/cluster/apps", f"{layout.namenode_web_url}/jmx"):
        anonymous = requests.get(url, timeout=10)
        assert anonymous.status_code == 401, (url, anonymous.text)
    listed = run_tfyarn(secure_cluster, "list", env=env)
    assert listed.returncode != 0 and "No valid Kerberos ticket" in listed.stderr, listed.stderr


def test_seed_job_succeeds_with_checkpoints_on_hdfs(secure_cluster: LocalCluster,
                                                    tmp_path: Path) -> None:
    # one worker: what Kerberos asks of a job is the same for each of its tasks
    res, app = prepare_job(tmp_path, args=["--train_steps", "100"], components=ONE_WORKER)
    done = submit_and_wait(secure_cluster, tmp_path, res, app)
    assert done.returncode == 0 and f"{done.app_id} SUCCEEDED" in done.output, done.output
    work_dir = f"/user/{secure.cluster_user()}/tfyarn/jobs/{done.app_id}"
    listing = hdfs_listing(secure_cluster, work_dir)
    assert re.search(r"checkpoints/model\.ckpt-\d+\.index", listing), listing
    assert f"{work_dir}/result.json" in listing, listing
    # The tasks' agents write there with hdfs-native and the job's delegation token (their
    # containers have no Kerberos ticket): the NameNode saw the user come in by token.
    namenode_log = secure_cluster.layout.daemon_log("namenode").read_text()
    user = secure.principal(secure.cluster_user())
    assert f"Auth successful for {user} (auth:TOKEN)" in namenode_log


def container_tokens(layout: Layout, app_id: str) -> list[Path]:
    """The token files YARN wrote into the app's containers (under the NodeManagers' dirs)."""
    return sorted(layout.state_dir.glob(f"nm*/local/usercache/{secure.cluster_user()}/appcache/"
                                        f"{app_id}/container_*/container_tokens"))


def test_no_ticket_is_refused_before_submitting(secure_cluster: LocalCluster,
                                                tmp_path: Path) -> None:
    res, app = prepare_light_job(tmp_path, [])
    refused = run_tfyarn(secure_cluster, "submit", "--resources", str(res), "--app-config",
                         str(app), env=without_tickets(secure_cluster, tmp_path))
    assert refused.returncode != 0 and "Submitted" not in refused.stdout, refused.stdout
    assert "nothing was submitted" in refused.stderr, refused.stderr
    assert "No valid Kerberos ticket" in refused.stderr and "kinit" in refused.stderr


def test_a_client_configured_without_kerberos_is_told_the_cluster_wants_it(
        secure_cluster: LocalCluster, tmp_path: Path) -> None:
    """A copy of the cluster's client configuration that says "simple": submit names what
    the NameNode answers and the key to fix, and submits nothing."""
    conf_dir = tmp_path / "conf"
    shutil.copytree(secure_cluster.layout.conf_dir, conf_dir)
    core_site = conf_dir / "core-site.xml"
    text = core_site.read_text()
    core_site.write_text(text.replace(
        "<name>hadoop.security.authentication</name><value>kerberos</value>",
        "<name>hadoop.security.authentication</name><value>simple</value>"))
    assert core_site.read_text() != text
    res, app = prepare_light_job(tmp_path, [])
    before = application_ids(secure_cluster)
    refused = run_tfyarn(secure_cluster, "submit", "--resources", str(res), "--app-config",
                         str(app), env={**secure_cluster.env, "HADOOP_CONF_DIR": str(conf_dir)})
    assert refused.returncode != 0 and "nothing was submitted" in refused.stderr, refused.stderr
    assert "SIMPLE authentication is not enabled" in refused.stderr, refused.stderr
    assert f"hadoop.security.authentication = simple ({core_site})" in refused.stderr
    assert application_ids(secure_cluster) == before


def test_an_expired_ticket_is_refused_before_submitting(secure_cluster: LocalCluster,
                                                        tmp_path: Path) -> None:
    """The user's ticket cache with every ticket's end moved into the past (the KDC here will
    not issue tickets shorter than an hour, so the test cannot wait for one to expire)."""
    cache = tmp_path / "expired_cache"
    cache.write_bytes(expired(secure.ticket_cache(secure_cluster.layout).read_bytes()))
    env = {**secure_cluster.env, "KRB5CCNAME": str(cache)}
    assert run(env, "klist", "-s").returncode != 0  # MIT's tools see it expired too
    res, app = prepare_light_job(tmp_path, [])
    refused = run_tfyarn(secure_cluster, "submit", "--resources", str(res), "--app-config",
                         str(app), env=env)
    user = secure.principal(secure.cluster_user())
    assert refused.returncode != 0 and "nothing was submitted" in refused.stderr, refused.stderr
    assert f"No valid Kerberos ticket in {cache} (the ticket of {user} expired " in (
        refused.stderr), refused.stderr
    assert f"Fix: run `kinit {user}` first" in refused.stderr, refused.stderr


def expired(cache: bytes) -> bytes:
    """The same MIT ticket cache (format 4) with every ticket's times a day and an hour in
    the past: what a cache looks like once its tickets expired."""
    data, now = bytearray(cache), int(time.time())
    assert data[:2] == b"\x05\x04", data[:2]
    at = 4 + struct.unpack_from(">H", data, 2)[0]  # after the header's tags

    def skip_principal(at: int) -> int:
        count = struct.unpack_from(">I", data, at + 4)[0]  # after its name type
        at += 8
        for _ in range(count + 1):  # the realm, then each component
            at += 4 + struct.unpack_from(">I", data, at)[0]
        return at

    def skip_counted(at: int) -> int:  # addresses or authdata: type (2), length (4), data
        count, at = struct.unpack_from(">I", data, at)[0], at + 4
        for _ in range(count):
            at += 6 + struct.unpack_from(">I", data, at + 2)[0]
        return at

    at = skip_principal(at)  # the cache's default principal, then each credential
    while at < len(data):
        at = skip_principal(skip_principal(at))  # client, server
        at += 6 + struct.unpack_from(">I", data, at + 2)[0]  # key: type (2), length (4), key
        if struct.unpack_from(">I", data, at + 8)[0]:  # an end time: a ticket, not a setting
            struct.pack_into(">IIII", data, at, now - 86400, now - 86400, now - 3600, now - 3600)
        at = skip_counted(skip_counted(at + 16 + 1 + 4))  # times, is_skey, flags
        for _ in range(2):  # the ticket, the second ticket
            at += 4 + struct.unpack_from(">I", data, at)[0]
    return bytes(data)


def test_a_principal_the_kdc_does_not_know_is_refused(secure_cluster: LocalCluster,
                                                      tmp_path: Path) -> None:
    """A keytab for a principal the KDC never heard of (a typo in the realm's admin's
    hands, another realm's keytab): the KDC's own words, which principal, and the fix."""
    realm = secure.principal("x").split("@", 1)[1]
    ghost, keytab = f"ghost@{realm}", tmp_path / "ghost.keytab"
    made = subprocess.run(["ktutil"], input=(
        f"addent -password -p {ghost} -k 1 -e aes128-cts-hmac-sha1-96\nsecret\n"
        f"wkt {keytab}\nquit\n"), capture_output=True, text=True, timeout=30)
    assert keytab.exists(), made.stdout + made.stderr
    refused = run_tfyarn(secure_cluster, "--principal", ghost, "--keytab", str(keytab), "list",
                         env=without_tickets(secure_cluster, tmp_path))
    assert refused.returncode != 0, refused.stdout
    assert f"Kerberos refused --principal {ghost} with --keytab {keytab}" in refused.stderr, (
        refused.stderr)
    assert "not found in Kerberos database" in refused.stderr, refused.stderr
    assert "check the principal's name and realm" in refused.stderr, refused.stderr


def test_a_keytab_without_the_principal_is_refused(secure_cluster: LocalCluster,
                                                   tmp_path: Path) -> None:
    user = secure.cluster_user()
    keytab = secure.keytab(secure_cluster.layout, user)
    refused = run_tfyarn(secure_cluster, "--principal", secure.principal(secure.OTHER_USER),
                         "--keytab", str(keytab), "list",
                         env=without_tickets(secure_cluster, tmp_path))
    assert refused.returncode != 0, refused.stdout
    assert (f"holds no key for --principal {secure.principal(secure.OTHER_USER)} (it holds "
            f"{secure.principal(user)})") in refused.stderr, refused.stderr


def test_access_lists_in_the_job_config_let_another_user_see_and_kill_it(
        secure_cluster: LocalCluster, tmp_path: Path) -> None:
    other = secure.OTHER_USER
    res, app = prepare_light_job(tmp_path, ["--sleep", "600"],
                                 settings={"acl.view": other, "acl.modify": f"{other} ml-admins"})
    planned = run_tfyarn(secure_cluster, "submit", "--resources", str(res), "--app-config",
                         str(app), "--dry-run")
    assert f"view '{other}', kill '{other} ml-admins'" in planned.stdout, planned.stdout
    assert f"job page: you, {other} (by Kerberos name)" in planned.stdout, planned.stdout
    submitted = run_tfyarn(secure_cluster, "submit", "--resources", str(res), "--app-config",
                           str(app), "--detach", "--json", timeout_s=180)
    assert submitted.returncode == 0, submitted.stderr
    app_id = json.loads(submitted.stdout)["application_id"]
    as_other = {**secure_cluster.env,
                "KRB5CCNAME": str(secure.kinit(secure_cluster.layout, other))}
    try:
        wait_for("the job running", lambda: app_state(secure_cluster, app_id) == "RUNNING", 120)
        seen = run(as_other, "yarn", "application", "-status", app_id)
        assert seen.returncode == 0 and "AM Host : N/A" not in seen.stdout, seen
        tasks = json.loads(submitted.stdout)["job_page"] + "tasks.json"
        wait_for(f"{other} reading the job page", lambda: (
            (page := get_as(as_other, tasks)).status_code == 200
            and len(page.json()["tasks"]) == 4), 120)
        killed = run_tfyarn(secure_cluster, "kill", app_id, env=as_other)
        assert killed.returncode == 0, killed.stdout + killed.stderr
        wait_for("the job killed", lambda: app_state(secure_cluster, app_id) == "KILLED", 60)
    finally:
        run_tfyarn(secure_cluster, "kill", app_id)


def get_as(env: dict[str, str], url: str) -> requests.Response:
    """GET as the user whose ticket cache ``env`` names, answering SPNEGO as tfyarn does."""
    with mock.patch.dict(os.environ, env):
        return spnego.get(url, timeout=10)


def test_the_job_page_is_reached_through_the_proxy_only(secure_cluster: LocalCluster,
                                                       tmp_path: Path) -> None:
    """As a person sees it, in headless Chromium that logs in with Kerberos (SPNEGO): the link
    `submit` prints goes through the RM's proxy to the job page, which lists the tasks to
    their owner. bob, not in the job's view ACL, is refused by the AppMaster's UI, YARN
    shows him the report's public fields only and refuses his kill; a caller without
    tickets is refused by the RM. The page's own server refuses the AppMaster host's address.
    The job's TensorBoard too is the owner's through the proxy only (issue 36): bob is
    refused it, and its own port answers 403."""
    layout = secure_cluster.layout
    res, app = prepare_light_job(tmp_path, ["--sleep", "600", "--summaries"], components={
        "tensorboard": {"yarn.role.priority": "4", "yarn.component.instances": "1",
                        "yarn.memory": "1024", "yarn.vcores": "1"}})
    planned = run_tfyarn(secure_cluster, "submit", "--resources", str(res), "--app-config",
                         str(app), "--dry-run")
    assert "job page: you (by Kerberos name)" in planned.stdout, planned.stdout
    submitted = run_tfyarn(secure_cluster, "submit", "--resources", str(res), "--app-config",
                           str(app), "--detach", "--json", timeout_s=180)
    assert submitted.returncode == 0, submitted.stderr
    printed = json.loads(submitted.stdout)
    app_id, page = printed["application_id"], printed["job_page"]
    as_other = {**secure_cluster.env,
                "KRB5CCNAME": str(secure.kinit(layout, secure.OTHER_USER))}
    try:
        wait_for("every task running", lambda: (
            (view := live_view(layout, printed["tracking_url"])) and len(view.tasks) == 4
            and all(task.state == "running" for task in view.tasks)), 180)
        with chromium(secure_cluster.env) as owner:
            open_page(owner, page)
            shown = wait_for("the job page's tasks", lambda: task_rows(owner), 60)
            assert shown == {"ps-0", "chiefworker-0", "worker-0", "worker-1"}, owner.page_source
            board = printed["tracking_url"] + "pages/tensorboard/"
            runs = wait_for("TensorBoard's runs through the proxy, with SPNEGO", lambda: (
                (answer := get_as(secure_cluster.env, board + "data/runs")).ok
                and answer.json()), 120)
            assert runs == ["train"], runs
            open_page(owner, board)
            wait_for("TensorBoard's app", lambda: owner.title == "TensorBoard", 60)
        with chromium(as_other) as other:
            open_page(other, page)
            assert "User is not authorized to access this page" in other.page_source
            assert not task_rows(other)
        refused = get_as(as_other, page + "tasks.json")
        assert refused.status_code == 403, refused.text
        killed = run_tfyarn(secure_cluster, "kill", app_id, env=as_other)
        assert killed.returncode != 0, killed.stdout
        assert (f"User {secure.OTHER_USER} cannot perform operation MODIFY_APP on {app_id}"
                in killed.stderr), killed.stderr
        assert app_state(secure_cluster, app_id) == "RUNNING"
        # YARN answers a user without VIEW access with the report's public fields only.
        seen = run(as_other, "yarn", "application", "-status", app_id)
        assert "Tracking-URL : N/A" in seen.stdout and "AM Host : N/A" in seen.stdout, seen
        owner_sees = run(secure_cluster.env, "yarn", "application", "-status", app_id)
        assert "Tracking-URL : N/A" not in owner_sees.stdout, owner_sees.stdout
        refused = get_as(as_other, printed["tracking_url"] + "pages/tensorboard/data/runs")
        assert refused.status_code == 403, refused.text
        direct = live_view(layout, printed["tracking_url"]).tensorboard_url
        assert requests.get(direct + "/data/runs", timeout=10).status_code == 403
        anonymous = requests.get(page, timeout=10)
        assert anonymous.status_code == 401, anonymous.text
        assert anonymous.headers["WWW-Authenticate"] == "Negotiate"
        am_host = app_report(secure_cluster, app_id)["amHostHttpAddress"].split(":")[0]
        master_log = next(layout.state_dir.glob(
            f"nm*/containers/{app_id}/*_000001/application.driver.log")).read_text()
        port = int(re.search(r"job page on 127\.0\.0\.1:(\d+)", master_log)[1])
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((am_host, port), timeout=5).close()
    finally:
        run_tfyarn(secure_cluster, "kill", app_id)


def live_view(layout: Layout, tracking_url: str):
    """The job's task table as `tfyarn status` reads it, with the owner's tickets."""
    with secure.client_environ(layout):
        return jobview.live_view(tracking_url)


def _vint(data: bytes, at: int) -> tuple[int, int]:
    """Hadoop's WritableUtils.readVInt: (value, next offset)."""
    (first,) = struct.unpack_from("b", data, at)
    if first >= -112:
        return first, at + 1
    negative = first < -120
    size = (-119 - first) if negative else (-111 - first)
    value = int.from_bytes(data[at + 1:at + size], "big")
    return (~value if negative else value), at + size


def token_passwords(credentials: bytes) -> list[bytes]:
    """The passwords of the tokens in a Hadoop credentials file (HDTS, Writable format 0)."""
    assert credentials[:5] == b"HDTS\x00", credentials[:5]
    count, at = _vint(credentials, 5)
    found = []
    for _ in range(count):
        for field in ("alias", "identifier", "password", "kind", "service"):
            size, at = _vint(credentials, at)
            if field == "password":
                found.append(credentials[at:at + size])
            at += size
    return found


def keytab_keys(keytab: Path) -> list[bytes]:
    """The key bytes of each keytab entry (after the name, type, time, version, enctype)."""
    keys = []
    for _, entry in keytab_entries(keytab.read_bytes()):
        (count,) = struct.unpack_from(">H", entry, 4)
        at = 6
        for _ in range(count + 1):
            at += 2 + struct.unpack_from(">H", entry, at)[0]
        at += 4 + 4 + 1 + 2  # name type, timestamp, key version, enctype
        (size,) = struct.unpack_from(">H", entry, at)
        keys.append(entry[at + 2:at + 2 + size])
    return keys


def spellings(secret: bytes) -> set[bytes]:
    return {secret, secret.hex().encode(), base64.b64encode(secret).rstrip(b"="),
            base64.urlsafe_b64encode(secret).rstrip(b"=")}


def test_no_secret_in_logs_process_table_or_status(secure_cluster: LocalCluster,
                                                   tmp_path: Path) -> None:
    """`submit --wait` with a principal and keytab and no ticket at all (the client logs in
    from the keytab, the AppMaster gets it and hands new tokens to the agents): the job
    SUCCEEDS, and none of its secrets (the keytab's keys, every token's password) is in a
    log, the process table, `tfyarn status` or what submit printed."""
    layout, user = secure_cluster.layout, secure.cluster_user()
    res, app = prepare_light_job(tmp_path, ["--sleep", "30"])
    submit = subprocess.Popen(
        [*TFYARN, "--principal", secure.principal(user), "--keytab",
         str(secure.keytab(layout, user)), "submit", "--resources", str(res), "--app-config",
         str(app), "--wait"], env=without_tickets(secure_cluster, tmp_path),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    printed = []
    try:
        for line in submit.stdout:
            printed.append(line)
            if line.startswith("Submitted "):
                break
        assert printed and printed[-1].startswith("Submitted "), "".join(printed)
        app_id = printed[-1].split()[1]
        containers = f"nm*/local/usercache/{user}/appcache/{app_id}/container_*"
        token_files = wait_for("a container with the AppMaster's new tokens", lambda: (
            sorted(layout.state_dir.glob(f"{containers}/{hdfstokens.TOKENS_FILE}"))
            and sorted(layout.state_dir.glob(f"{containers}/container_tokens"))
            + sorted(layout.state_dir.glob(f"{containers}/{hdfstokens.TOKENS_FILE}"))), 180)
        secrets = [p for f in token_files for p in token_passwords(f.read_bytes())]
        # Hadoop's token passwords are HMAC-SHA1s: 20 bytes each, or the parse went wrong.
        assert secrets and {len(password) for password in secrets} == {20}, secrets
        status = run_tfyarn(secure_cluster, "status", app_id, "--json")
        processes = b"".join(_read(path) for pattern in ("proc/[0-9]*/cmdline",
                                                         "proc/[0-9]*/environ")
                             for path in Path("/").glob(pattern))
        printed.append(submit.communicate(timeout=SUBMIT_TIMEOUT_S)[0])
    finally:
        if submit.poll() is None:
            submit.kill()
    output = "".join(printed)
    assert submit.returncode == 0 and f"{app_id} SUCCEEDED" in output, output
    keys = keytab_keys(secure.keytab(layout, user))
    assert keys and {len(key) for key in keys} <= {16, 24, 32}, keys  # AES, 3DES keys
    secrets += keys
    logs = [p for p in (*layout.log_dir.rglob("*"),
                        *layout.state_dir.glob(f"nm*/containers/{app_id}/**/*")) if p.is_file()]
    places = {str(p): p.read_bytes() for p in logs}
    places |= {"process table": processes, "status --json": status.stdout.encode(),
               "submit's output": output.encode()}
    leaks = {(where, text) for secret in secrets for text in spellings(secret)
             for where, content in places.items() if text in content}
    assert not leaks, leaks


def _read(path: Path) -> bytes:
    """A file's bytes, or none where it is gone or not ours to read (a process's, say)."""
    try:
        return path.read_bytes()
    except OSError:
        return b""


@dataclass(frozen=True)
class KeytabJob:
    """A job submitted with a keytab, whose chief a timer thread kills once the tokens of
    its submit died (kill_the_chief_once_its_tokens_died)."""

    secure_cluster: LocalCluster
    app_id: str
    steps: int  # the training's last step
    chief_killed: Future[None]  # the timer's end: its failed checks are raised by .result()
    timer: ThreadPoolExecutor
    ended: threading.Event

    def end(self) -> None:
        self.ended.set()  # the timer stops waiting, if it still does
        run_tfyarn(self.secure_cluster, "kill", self.app_id)
        self.timer.shutdown()


def start_keytab_job(secure_cluster: LocalCluster, tmp_path: Path) -> KeytabJob:
    layout, user = secure_cluster.layout, secure.cluster_user()
    # the chief and one worker, 0.6 s a step each: training outlasts the tokens by 20 s at
    # least, in a sixth of the steps (and of their CPU) that 0.1 s a step would take
    steps = int((secure.TOKEN_MAX_LIFETIME_S + 20) * 2 / 0.6)
    res, app = prepare_job(tmp_path, args=["--train_steps", str(steps), "--step_sleep", "0.6"],
                           components={"chiefworker": {"yarn.container.failure.threshold": "1"},
                                       **ONE_WORKER})
    no_tickets = without_tickets(secure_cluster, tmp_path)
    submitted = run_tfyarn(secure_cluster, "--principal", secure.principal(user), "--keytab",
                           str(secure.keytab(layout, user)), "submit", "--resources", str(res),
                           "--app-config", str(app), "--detach", "--json", timeout_s=180,
                           env=no_tickets)
    tokens_die_at = time.monotonic() + int(site_value(
        str(layout.conf_dir), "hdfs-site.xml", "dfs.namenode.delegation.token.max-lifetime")) / 1000
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    app_id = json.loads(submitted.stdout)["application_id"]
    timer, ended = ThreadPoolExecutor(1), threading.Event()
    killed = timer.submit(kill_the_chief_once_its_tokens_died, secure_cluster, app_id,
                          tokens_die_at, no_tickets, tmp_path / "original_tokens", ended)
    return KeytabJob(secure_cluster, app_id, steps, killed, timer, ended)


def kill_the_chief_once_its_tokens_died(secure_cluster: LocalCluster, app_id: str,
                                        tokens_die_at: float, no_tickets: dict[str, str],
                                        original: Path, ended: threading.Event) -> None:
    """Keeps the tokens YARN gave the job's first containers in ``original``; ten seconds
    after they died (checked: a new connection with them is refused), with the job still
    running, kills its chief. Returns early where ``ended`` is set first."""
    layout = secure_cluster.layout
    first = wait_for("a container's tokens", lambda: container_tokens(layout, app_id), 180)
    original.write_bytes(first[0].read_bytes())
    if ended.wait(max(0.0, tokens_die_at + 10 - time.monotonic())):
        return
    assert app_state(secure_cluster, app_id) == "RUNNING"
    refused = run({**no_tickets, "HADOOP_TOKEN_FILE_LOCATION": str(original)}, sys.executable,
                  "-c", f"from hdfs_native import Client; Client('{layout.default_fs}')"
                  ".get_file_info('/')")
    assert refused.returncode != 0, "the job's own tokens still open connections"
    chief = wait_for("the chief's script", lambda: next(
        (p for p in task_processes(app_id, "mnist1.py")
         if {"--job_name=worker", "--task_index=0"} <= set(p.argv)), None), 180)
    os.kill(chief.pid, signal.SIGKILL)


@pytest.fixture(scope="module", autouse=True)
def early_keytab_job(secure_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory,
                     request: pytest.FixtureRequest) -> Iterator[list[KeytabJob]]:
    """The job of test_a_job_with_a_keytab_outlives_its_tokens (this module's last test),
    submitted as the module starts, where that test is to run: its tokens take
    TOKEN_MAX_LIFETIME_S to die, which the module's other tests spend on jobs of their own
    rather than the lane on a sleep. The test takes it from the list; a rerun starts its own,
    and so does the test where the submit here failed (it fails there, not every test here)."""
    jobs: list[KeytabJob] = []
    if any(item.name == test_a_job_with_a_keytab_outlives_its_tokens.__name__
           for item in request.session.items):
        with contextlib.suppress(Exception):
            jobs.append(start_keytab_job(secure_cluster, tmp_path_factory.mktemp("keytab-job")))
    try:
        yield jobs
    finally:
        for job in jobs:  # not taken
            job.end()


def test_a_job_with_a_keytab_outlives_its_tokens(secure_cluster: LocalCluster,
                                                 early_keytab_job: list[KeytabJob],
                                                 tmp_path: Path) -> None:
    """The job's tokens die TOKEN_MAX_LIFETIME_S after submit (checked: a new connection with
    them is refused). Then its chief is killed: the whole TensorFlow cluster restarts in new
    containers, which YARN localizes with the tokens its ResourceManager got anew, and whose
    agents restore the checkpoint from HDFS with the tokens the AppMaster got from the keytab.
    The job ends SUCCEEDED, its last checkpoint written to HDFS long after the old tokens died."""
    job = early_keytab_job.pop() if early_keytab_job else start_keytab_job(secure_cluster,
                                                                            tmp_path)
    layout, user, app_id = secure_cluster.layout, secure.cluster_user(), job.app_id
    try:
        job.chief_killed.result(timeout=600)
        wait_for("the job's end", lambda: app_state(secure_cluster, app_id) in FINAL, 600)
    finally:
        job.end()
    report = app_report(secure_cluster, app_id)
    assert report["finalStatus"] == "SUCCEEDED", report["diagnostics"]
    assert "chiefworker 0 failed: cluster restarted as generation 1" in report["diagnostics"]
    listing = hdfs_listing(secure_cluster, f"/user/{user}/tfyarn/jobs/{app_id}/checkpoints")
    written = [int(step) for step in re.findall(r"model\.ckpt-(\d+)\.index", listing)]
    assert written and max(written) >= job.steps, listing  # workers may step past
    logs = {p: p.read_text(errors="replace")
            for p in layout.state_dir.glob(f"nm*/containers/{app_id}/*/*") if p.is_file()}
    master = "".join(t for p, t in logs.items() if p.name == "application.driver.log")
    assert len(re.findall(r"new HDFS tokens obtained", master)) >= 2, master[-3000:]
    restored = [t for t in logs.values() if "using new HDFS tokens" in t
                and re.search(r"restored checkpoints/model\.ckpt-[1-9]\d* from hdfs://", t)]
    assert restored, "no restarted task restored the checkpoint with the AppMaster's tokens"
