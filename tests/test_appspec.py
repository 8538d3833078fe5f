"""The skein spec a job becomes: who gets the keytab, and the application's ACLs. That YARN
enforces them is tests/test_secure_yarn.py's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from jobtools import REPO, prepare_job
from test_job import plan

from appmaster.common.agentlink import TOKEN_FILE
from appmaster.common.hdfstokens import KEYTAB_FILE, KRB5_CONF_FILE
from appmaster.common.jobplan import PLAN_FILE
from appmaster.common.registry import PLACEMENT_APART_ENV
from tfyarn.jobconfig import load_job
from tfyarn.submission.api import SubmitOptions
from tfyarn.submission.appspec import (
    LOG_EXCLUDE_ENV,
    LOG_INCLUDE_ENV,
    apart_env,
    application_spec,
    log_aggregation_env,
)
from tfyarn.submission.plan import AppSpecExtras, build_plan


def spec_of(tmp_path: Path, extras: AppSpecExtras | None = None, keytab: str | None = None,
            sets: tuple[str, ...] = ()):
    tmp_path.mkdir(parents=True, exist_ok=True)
    job = load_job(*prepare_job(tmp_path, scripts_dir=REPO / "examples"), user="alice",
                   overrides=SubmitOptions(sets=sets).overrides())
    plan = build_plan(job)
    job_file = tmp_path / PLAN_FILE
    job_file.write_text(plan.to_json())
    return application_spec(plan, job.client.scripts_dir, job_file, extras or AppSpecExtras(),
                            keytab=keytab)


def test_the_keytab_goes_to_the_appmaster_alone(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    keytab, krb5_conf = tmp_path / "alice.keytab", tmp_path / "krb5.conf"
    keytab.write_bytes(b"\x05\x02")
    krb5_conf.write_text("[libdefaults]\n")
    monkeypatch.setenv("KRB5_CONFIG", str(krb5_conf))
    spec = spec_of(tmp_path, keytab=str(keytab))
    shipped = spec.master.files[KEYTAB_FILE]
    assert shipped.source.endswith(str(keytab)) and str(shipped.visibility) == "APPLICATION"
    assert spec.master.files[KRB5_CONF_FILE].source.endswith(str(krb5_conf))
    for service in spec.services.values():
        assert KEYTAB_FILE not in service.files and TOKEN_FILE in service.files
    assert KEYTAB_FILE not in spec_of(tmp_path / "plain").master.files
    spec.to_dict()  # skein validates the whole spec


def test_access_lists_become_yarns_acls_and_skeins_ui_stays_open_without_a_web_login(
        tmp_path: Path) -> None:
    """Where the cluster's web UI logs nobody in, the RM's proxy names every caller alike:
    skein's UI cannot tell users apart, so it stays open."""
    acls = spec_of(tmp_path, sets=("site.global.acl.view=alice,bob ml-team",
                                   "site.global.acl.modify=carol admins")).acls
    assert acls.enable
    assert (acls.view_users, acls.view_groups) == (["alice", "bob"], ["ml-team"])
    assert (acls.modify_users, acls.modify_groups) == (["carol"], ["admins"])
    assert acls.ui_users == ["*"]
    assert not spec_of(tmp_path / "default").acls.enable  # YARN's own: owner and admins


@pytest.mark.parametrize(("view_acl", "page_users"), [
    (None, []),  # the owner alone (skein always admits the owner)
    ("alice,bob ml-team", ["alice", "bob"]),  # users by name; skein's UI knows no groups
    ("bob *", ["*"]),
    ("*", ["*"]),
])
def test_with_a_web_login_the_job_page_admits_the_view_acls_users(
        tmp_path: Path, view_acl: str | None, page_users: list[str]) -> None:
    sets = () if view_acl is None else (f"site.global.acl.view={view_acl}",)
    acls = spec_of(tmp_path, AppSpecExtras(web_login=True), sets=sets).acls
    assert acls.enable and acls.ui_users == page_users


def test_every_role_is_asked_for_at_submit_each_with_its_label(tmp_path: Path) -> None:
    """skein asks for every container as its AppMaster registers (the master adopts them),
    each role in its own partition."""
    spec = spec_of(tmp_path)
    (tmp_path / "again").mkdir()
    job = load_job(*prepare_job(tmp_path / "again", scripts_dir=REPO / "examples"), user="alice")
    assert {name: (service.instances, service.node_label)
            for name, service in spec.services.items()} == {
        role.name: (role.instances, role.label or "") for role in job.spec.components}


def test_log_patterns_reach_the_patched_driver_as_one_expression_each() -> None:
    assert log_aggregation_env(plan()) == {}  # YARN's default: every file
    patterned = replace(plan(), log_include_patterns=(r".*\.stdout$", "^train"),
                        log_exclude_patterns=(r"\.tmp$",))
    assert log_aggregation_env(patterned) == {LOG_INCLUDE_ENV: r".*\.stdout$|^train",
                                              LOG_EXCLUDE_ENV: r"\.tmp$"}


def test_an_anti_affine_role_is_marked_for_the_appmasters_first_requests(
        tmp_path: Path) -> None:
    assert not any(PLACEMENT_APART_ENV in service.env
                   for service in spec_of(tmp_path).services.values())
    ps = plan().roles[0]
    assert [apart_env(replace(ps, placement_policy=policy)) for policy in (0, 1, 2, 4, 5, 6)] \
        == [{}] * 3 + [{PLACEMENT_APART_ENV: "1"}] * 3
