"""`tfyarn config`: every setting the defaults files and the job's files give, and whence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from tfyarn.jobconfig import JobConfigError, load_job, read_defaults
from tfyarn.jobconfig.defaults import JOB_FILE, Defaults, Source, effective
from tfyarn.jobconfig.overrides import declared, parse_set


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
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def config_command(ctx: click.Context, resources_path: str, app_config_path: str,
                   sets: tuple[str, ...], as_json: bool) -> None:
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
    elif defaults.problems:
        raise JobConfigError(defaults.problems)
    else:
        table = effective(defaults, overrides=[parse_set(text) for text in sets])
    files = _files(defaults, job_files)
    if as_json:
        click.echo(json.dumps({"files": files, "settings": {
            key: {"value": value, "level": source.level, "file": source.path,
                  "meaning": meaning(key)}
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
