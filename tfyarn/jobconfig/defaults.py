"""Defaults for every job: the cluster's, set by its administrators, and a person's own.

Two YAML files give them, each read when it exists: the cluster's on the edge nodes,
/etc/tfyarn/tfyarn.yaml, and the person's, ~/.config/tfyarn/tfyarn.yaml (under
$XDG_CONFIG_HOME when that is set). TFYARN_CONFIG=<path> replaces the person's file's
location: that file must exist, since a name set on purpose and not found is a mistake.
TFYARN_SYSTEM_CONFIG=<path> replaces the cluster's location, for tests and packagers.

Each file is a flat mapping of the keys that the job files' "global" sections hold:
appConfig.json's (site.global.queue, site.global.python.env, ...), resources.json's
(yarn.memory, ...: for every component) and the AppMaster's size as
slider-appmaster.yarn.memory and slider-appmaster.yarn.vcores. Paths in it (python.env, the
secrets' files) are relative to its directory. What a job cannot share with others (its
script, its name, each component's priority and instances) is refused.

The command line beats the job files, which beat the person's file, which beats the
cluster's: the defaults are merged into the job's documents before these are checked, so
every check of a job file sees the merged values, and a component's own value in
resources.json still beats every default for all components. Each defaults file is
first checked on its own by the job files' checks, so its problems name it and its keys.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from appmaster.common.settings import APP_PREFIX, QUEUE
from tfyarn.jobconfig import appconfig, resources
from tfyarn.jobconfig.documents import (
    COMMAND_LINE,
    NO_VALUE,
    Checker,
    key_path,
    kind_of,
    read_file,
    report_unknown,
)
from tfyarn.jobconfig.model import (
    APPMASTER,
    BUILT_IN,
    CLUSTER,
    COMPONENT_NAMES,
    JOB_FILE,
    PERSONAL,
    Problem,
    SettingValue,
    Source,
)
from tfyarn.jobconfig.overrides import Override

SYSTEM_FILE = "/etc/tfyarn/tfyarn.yaml"
SYSTEM_ENV = "TFYARN_SYSTEM_CONFIG"  # another cluster's file: for tests and packagers
PERSONAL_ENV = "TFYARN_CONFIG"

_APPMASTER_PREFIX = APPMASTER + "."
_APP_KEYS = tuple(k for k in appconfig.APP_KEYS if k not in appconfig.JOB_ONLY_KEYS)
_RESOURCE_KEYS = tuple(k for k in resources.RESOURCE_KEYS if k not in resources.JOB_ONLY_KEYS)
KEYS = (*_APP_KEYS, *_RESOURCE_KEYS, *(_APPMASTER_PREFIX + k for k in resources.APPMASTER_KEYS))
# Where the job files' checks say a key is, and where it is in a defaults file.
_KEY_IN_JOB_FILE = {
    **{key_path("global", k): key_path(k) for k in (*_APP_KEYS, *_RESOURCE_KEYS)},
    **{key_path("components", APPMASTER, k): key_path(_APPMASTER_PREFIX + k)
       for k in resources.APPMASTER_KEYS},
}

T = TypeVar("T")


@dataclass(frozen=True)
class DefaultsFile:
    source: Source
    # as written, its paths made absolute; None: there is no such file; {}: it has problems,
    # which are the Defaults' (its values are left out, so that no job file is blamed)
    settings: dict[str, Any] | None


@dataclass(frozen=True)
class Defaults:
    """The defaults files, the cluster's first, and the problems found in them."""

    files: tuple[DefaultsFile, ...] = ()
    problems: tuple[Problem, ...] = ()

    def levels(self) -> list[tuple[Source, dict[str, Any]]]:
        return [(f.source, f.settings) for f in self.files if f.settings]

    def app_document(self, doc: dict[str, Any]) -> dict[str, Any]:
        """appConfig's document with the defaults in its "global"."""
        return _with_defaults(doc, "global", [_part(s, APP_PREFIX) for _, s in self.levels()])

    def resources_document(self, doc: dict[str, Any]) -> dict[str, Any]:
        """resources.json's document with the defaults in its "global", and the AppMaster's
        in its "slider-appmaster" component."""
        levels = [s for _, s in self.levels()]
        doc = _with_defaults(doc, "global", [_part(s, "") for s in levels])
        components = doc.get("components")
        if not isinstance(components, dict):
            return doc  # the job has no components: parsing says so
        for_am = [_part(s, _APPMASTER_PREFIX) for s in levels]
        return {**doc, "components": _with_defaults(components, APPMASTER, for_am)}


def read_defaults() -> Defaults:
    """The cluster's and the person's defaults, from where the environment says."""
    problems: list[Problem] = []
    files = tuple(_read(source, required, problems) for source, required in locations())
    return Defaults(files, tuple(problems))


def locations() -> list[tuple[Source, bool]]:
    """The defaults files, the cluster's first, each with whether it must exist."""
    cluster = Source(CLUSTER, os.environ.get(SYSTEM_ENV) or SYSTEM_FILE)
    named = os.environ.get(PERSONAL_ENV)
    if named:
        return [(cluster, False), (Source(PERSONAL, os.path.expanduser(named)), True)]
    return [(cluster, False), (Source(PERSONAL, personal_file()), False)]


def personal_file() -> str:
    """~/.config/tfyarn/tfyarn.yaml, or under XDG_CONFIG_HOME (which must be absolute)."""
    home = os.environ.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(home):
        home = os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(home, "tfyarn", "tfyarn.yaml")


def effective(
    defaults: Defaults, job_files: Sequence[tuple[str, dict[str, Any]]] = (),
    overrides: Sequence[Override] = (),
) -> dict[str, SettingValue]:
    """Every setting the defaults, the job's (checked) files and the command line give, or
    tfyarn itself, with where it came from; keyed as in a defaults file, a component's own
    as <component>.<key>. `job_files`: resources.json's (path, document), then
    appConfig.json's."""
    built_in = {**appconfig.BUILT_IN, **resources.BUILT_IN,
                **{_APPMASTER_PREFIX + k: v for k, v in resources.APPMASTER_BUILT_IN.items()}}
    levels = [(Source(BUILT_IN), built_in), *defaults.levels()]
    levels += [(Source(JOB_FILE, path), _flat(doc)) for path, doc in job_files]
    own = [key for path, doc in job_files for key in _flat(doc)]
    levels += [(Source(COMMAND_LINE, o.option), _overridden(o, own)) for o in overrides]
    table = _layered(levels)
    for key in resources.APPMASTER_BUILT_IN:  # the AppMaster's own default yields to everyone's
        if table[_APPMASTER_PREFIX + key][1].level == BUILT_IN and table[key][1].level != BUILT_IN:
            del table[_APPMASTER_PREFIX + key]
    return dict(sorted(table.items(), key=lambda item: (_group(item[0]), item[0])))


def where_set(table: dict[str, SettingValue], job_file: str, key: str) -> tuple[str, str]:
    """(file, key path) of the setting ``key`` in a job's ``table`` (effective's), for
    messages about its value (pre-flight's, the work dir's): the option that gave it
    (COMMAND_LINE), the defaults file that did, or its place in ``job_file`` (the job file
    that holds such a key: appConfig.json's site.global.*, resources.json's others), also
    where only tfyarn's own default gives it. ``key`` is named as in the table: a
    component's own as <component>.<key>, which every component's value gives when the
    component has none of its own."""
    first, _, own = key.partition(".")
    component = first if own and first in COMPONENT_NAMES else None
    given = key if key in table or component is None else own
    source = table[given][1] if given in table else Source(BUILT_IN)
    if source.level == COMMAND_LINE and source.path is not None:
        return COMMAND_LINE, source.path
    if source.level not in (JOB_FILE, BUILT_IN) and source.path is not None:
        return source.path, key_path(given)
    if key.startswith(APP_PREFIX):
        return job_file, key_path("global", key)
    if component is not None and (given == key or source.level == BUILT_IN):
        return job_file, key_path("components", component, own)  # where to write its own
    return job_file, key_path("global", given)


def _read(source: Source, required: bool, problems: list[Problem]) -> DefaultsFile:
    assert source.path is not None
    c = _DefaultsChecker(source.path, problems)
    path = Path(source.path)
    if not path.exists():
        if required:
            c.add(None, f"no such file ({path.absolute()}), named by {PERSONAL_ENV}",
                  f"create it, or unset {PERSONAL_ENV} to read {personal_file()} instead.")
        return DefaultsFile(source, None)
    found = len(problems)
    settings = _check(c, path)
    return DefaultsFile(source, settings if len(problems) == found else {})


def _check(c: Checker, path: Path) -> dict[str, Any]:
    """The file's settings, each checked by the job files' own checks."""
    doc = read_file(c, path, as_yaml=True)
    if doc is NO_VALUE or doc is None:  # None: empty, or only comments
        return {}
    if not isinstance(doc, dict):
        c.add(None, f"must be a mapping of settings, not {kind_of(doc)}",
              f"write one setting a line, e.g. {QUEUE.key}: ml.")
        return {}
    settings = {str(k): v for k, v in doc.items()}
    for key in settings:
        if key in appconfig.JOB_ONLY_KEYS:
            c.add(key_path(key), "not a default: each job gives its own",
                  "write it in the job's appConfig.json, and remove it here.")
        elif key in resources.JOB_ONLY_KEYS:
            c.add(key_path(key), "not a default: each component gives its own",
                  "write it under each component in the job's resources.json, and remove it "
                  "here.")
        elif key not in KEYS:
            report_unknown(c, key_path(key), key, KEYS, "key")
    base = path.absolute().parent
    _check_values(c, settings, base)
    return appconfig.with_paths_from(settings, base)


def _check_values(c: Checker, settings: dict[str, Any], base: Path) -> None:
    appconfig.check_settings(c, _part(settings, APP_PREFIX), base, None)
    resources.check_defaults(c, _part(settings, ""), _part(settings, _APPMASTER_PREFIX))


class _OptionChecker(Checker):
    """Names the option the user typed (--set KEY) for any problem with its value."""

    def __init__(self, option: str, problems: list[Problem]) -> None:
        super().__init__(COMMAND_LINE, problems)
        self.option = option

    def add(self, key: str | None, message: str, fix: str, value: Any = NO_VALUE) -> None:
        super().add(self.option, message, fix, value)


def check_overrides(overrides: Sequence[Override]) -> list[Problem]:
    """The values the command line gives, checked as the job files' own checks would, where
    no job file is read (`tfyarn config` alone); each problem names its option."""
    problems: list[Problem] = []
    for o in overrides:
        key = o.key if o.component is None or o.component == APPMASTER else o.setting_key
        key = _APPMASTER_PREFIX + o.setting_key if o.component == APPMASTER else key
        _check_values(_OptionChecker(o.option, problems), {key: o.value}, Path.cwd())
    return problems


class _DefaultsChecker(Checker):
    """The job files' checks name a key where it stands in a job file; this names it where
    it stands in a defaults file: global."site.global.queue" is "site.global.queue"."""

    def add(self, key: str | None, message: str, fix: str, value: Any = NO_VALUE) -> None:
        for in_job, here in _KEY_IN_JOB_FILE.items():
            if key is not None and (key == in_job or key.startswith(in_job + ".")):
                key = here + key[len(in_job):]
                break
        super().add(key, message, fix, value)


def _part(settings: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The settings of one section: appConfig's (site.global.*), the AppMaster's (without
    its prefix), or every component's ("")."""
    if prefix == APP_PREFIX:
        return {k: v for k, v in settings.items() if k.startswith(prefix)}
    if prefix:
        return {k.removeprefix(prefix): v for k, v in settings.items() if k.startswith(prefix)}
    return {k: v for k, v in settings.items()
            if not k.startswith((APP_PREFIX, _APPMASTER_PREFIX))}


def _with_defaults(doc: dict[str, Any], section: str,
                   defaults: list[dict[str, Any]]) -> dict[str, Any]:
    """The document with the defaults under `section`, whose own keys win."""
    own = doc.get(section)
    if not any(defaults) or (own is not None and not isinstance(own, dict)):
        return doc  # nothing to add, or a section that parsing refuses
    merged = _layered([(None, d) for d in [*defaults, own or {}]])
    return {**doc, section: {key: value for key, (value, _) in merged.items()}}


def _layered(levels: Iterable[tuple[T, dict[str, Any]]]) -> dict[str, tuple[Any, T]]:
    """Each key's value from the last level that gives it, with that level; a level giving
    one of two rival keys (appconfig.RIVAL_KEYS) hides the other from the levels below."""
    merged: dict[str, tuple[Any, T]] = {}
    for level, settings in levels:
        for key in settings:
            rival = appconfig.RIVAL_KEYS.get(key)
            if rival is not None and rival not in settings:
                merged.pop(rival, None)
        merged.update((key, (value, level)) for key, value in settings.items())
    return merged


def _flat(doc: dict[str, Any]) -> dict[str, Any]:
    """A job file's settings keyed as in a defaults file: "global"'s as they are, each
    component's as <component>.<key>."""
    settings = dict(doc.get("global") or {})
    for name, own in (doc.get("components") or {}).items():
        settings.update((f"{name}.{key}", value) for key, value in (own or {}).items())
    return settings


def _overridden(o: Override, own: list[str]) -> dict[str, Any]:
    """What an override sets, keyed as in the table: every component's key also replaces
    each component's own value."""
    if o.component is not None or o.key.startswith(APP_PREFIX):
        return {o.key: o.value}
    return {o.key: o.value, **{key: o.value for key in own if key.endswith("." + o.key)}}


def _group(key: str) -> int:
    """appConfig's keys first, then every component's, then each component's own."""
    if key.startswith(APP_PREFIX):
        return 0
    return 1 if key in resources.RESOURCE_KEYS else 2
