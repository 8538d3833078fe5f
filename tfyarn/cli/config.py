"""`tfyarn config`: every setting the defaults files and the job's files give, and whence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from appmaster.common.settings import (
    APP_SCOPE,
    APPMASTER_COMPONENT,
    APPMASTER_SCOPE,
    COMPONENT_SCOPE,
    JOB_SCOPE,
    settings,
)
from tfyarn.jobconfig import JobConfigError, load_job, read_defaults
from tfyarn.jobconfig.defaults import (
    BUILT_IN,
    JOB_FILE,
    Defaults,
    Source,
    check_overrides,
    effective,
)
from tfyarn.jobconfig.overrides import declared, parse_set

UNSET = "not set"  # a setting no file gives and with no default


@click.command("config")
@click.option("--resources", "resources_path", default="resources.json", show_default=True,
              type=click.Path(dir_okay=False),
              help="The job's components; without both job files, the defaults alone.")
@click.option("--app-config", "app_config_path", default="appConfig.json", show_default=True,
              type=click.Path(dir_okay=False),
              help="The job's settings; without both job files, the defaults alone.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="A setting as `tfyarn submit --set` gives it (repeatable): shown with "
                   "the command line as its origin.")
@click.option("--all", "every", is_flag=True,
              help="Every setting tfyarn knows, with its meaning, its default and where its "
                   "value comes from (also those no file gives).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def config_command(ctx: click.Context, resources_path: str, app_config_path: str,
                   sets: tuple[str, ...], every: bool, as_json: bool) -> None:
    """Show the settings a job gets from the defaults files and its own files.

    Each setting is shown with where it came from: the cluster's defaults file
    (/etc/tfyarn/tfyarn.yaml), your own (~/.config/tfyarn/tfyarn.yaml, or TFYARN_CONFIG), a
    job file, or tfyarn's built-in default. `tfyarn submit`'s options still beat them all.
    """
    defaults = read_defaults()
    given = any(ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT
                for name in ("resources_path", "app_config_path"))
    job_files: list[str] = []
    if given or Path(resources_path).exists() or Path(app_config_path).exists():
        # raises on any problem; the job carries every setting and where it came from
        table = load_job(resources_path, app_config_path, defaults=defaults,
                         overrides=[parse_set(text) for text in sets]).settings
        job_files = [resources_path, app_config_path]
    else:
        overrides = [parse_set(text) for text in sets]
        problems = [*defaults.problems, *check_overrides(overrides)]
        if problems:  # as submit would refuse them
            raise JobConfigError(problems)
        table = effective(defaults, overrides=overrides)
    if every:
        table = {**{key: (setting.shown_default if setting.shown_default != "none" else UNSET,
                          Source(BUILT_IN))
                    for key, setting in all_settings().items()}, **table}
    files = _files(defaults, job_files)
    if as_json:
        click.echo(json.dumps({"files": files, "settings": {
            key: {"value": value, "level": source.level, "file": source.path,
                  "meaning": meaning(key), "default": default_of(key)}
            for key, (value, source) in table.items()}}, indent=2))
        return
    for file in files:
        state = "read" if file["read"] else "absent"
        click.echo(f"{file['level'] + ':':<10} {file['path']} ({state})")
    if not job_files:
        click.echo(f"{JOB_FILE + ':':<10} none ({resources_path} and {app_config_path} are "
                   "absent): the defaults alone")
    click.echo()
    shown = [(key, _shown(value), str(source)) for key, (value, source) in table.items()]
    keys = max(len(key) for key, _, _ in shown)
    values = max(len(value) for _, value, _ in shown)
    for key, value, source in shown:
        click.echo(f"{key:<{keys}}  {value:<{values}}  {source}")
        if every:
            click.echo(f"{'':<{keys}}  {meaning(key)} [default: {default_of(key)}]")


def all_settings() -> dict:
    """Every declared setting, keyed as `tfyarn config` names it (appmaster/common/settings.py:
    appConfig's site.global.*, every component's yarn.*, the AppMaster's
    slider-appmaster.yarn.*)."""
    return {**{s.key: s for s in settings(APP_SCOPE)},
            **{s.key: s for s in settings(COMPONENT_SCOPE)},
            **{s.key: s for s in settings(JOB_SCOPE)},
            **{f"{APPMASTER_COMPONENT}.{s.key}": s for s in settings(APPMASTER_SCOPE)}}


def default_of(key: str) -> str:
    setting = declared(key)
    return setting.shown_default if setting else ""


def meaning(key: str) -> str:
    """A setting's one line from its declaration (appmaster/common/settings.py)."""
    setting = declared(key)
    return setting.meaning if setting else ""


def _files(defaults: Defaults, job_files: list[str]) -> list[dict[str, Any]]:
    """The defaults files, read or absent, then the job's files."""
    found = [(f.source, f.settings is not None) for f in defaults.files]
    found += [(Source(JOB_FILE, path), True) for path in job_files]
    return [{"path": source.path, "level": source.level, "read": read} for source, read in found]


def _shown(value: Any) -> str:
    """Strings as they are, unless spaces at their ends would not show; the rest as JSON."""
    if isinstance(value, str) and value and value == value.strip():
        return value
    return json.dumps(value, ensure_ascii=False)
