"""Settings given on the command line: `--set KEY=VALUE`, and the options that stand for one
setting (`--queue`, `--name`, `--am-memory`, `--am-vcores`).

They beat every file. Each lands where the job files would hold it, so that the same checks
judge it; a problem with it names the option the user typed, not a file (OverriddenChecker).
The checks after the files' (pre-flight's, the work dir's) find where each value came from in
the job's settings, the same way for every source (defaults.where_set). A key is named as
`tfyarn config` prints it: `site.global.queue`, `yarn.memory` (every component),
`worker.yarn.component.instances` (one component's; `components.worker.…` too).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from appmaster.common.settings import (
    APP_PREFIX,
    APP_SCOPE,
    APPMASTER_SCOPE,
    COMPONENT_SCOPE,
    INSTANCES,
    JOB_SCOPE,
    PRIORITY,
    QUEUE,
    Setting,
    settings,
)
from tfyarn.jobconfig import appconfig, resources
from tfyarn.jobconfig.documents import (
    COMMAND_LINE,
    LISTS_THE_KEYS,
    NO_VALUE,
    Checker,
    key_path,
)
from tfyarn.jobconfig.model import APPMASTER, COMPONENT_NAMES, JobConfigError, Problem


@dataclass(frozen=True)
class Override:
    key: str  # as `tfyarn config` prints it
    value: Any
    option: str  # what the user typed, for messages: "--queue", "--set worker.yarn.memory"

    @property
    def component(self) -> str | None:
        """The component whose own setting this is; None: appConfig's, or every component's."""
        first, _, rest = self.key.partition(".")
        return first if rest and first in COMPONENT_NAMES else None

    @property
    def setting_key(self) -> str:
        """The key inside its section: yarn.memory for worker.yarn.memory."""
        return self.key.split(".", 1)[1] if self.component else self.key


def _keys() -> list[str]:
    """Every key --set takes, as `tfyarn config` prints them (components' as <name>.<key>)."""
    every = [*appconfig.APP_KEYS, *resources.RESOURCE_KEYS, *resources.JOB_KEYS]
    own = [f"{name}.{key}" for name in COMPONENT_NAMES if name != APPMASTER
           for key in resources.RESOURCE_KEYS]
    return [*every, *own, *(f"{APPMASTER}.{k}" for k in resources.APPMASTER_KEYS)]


def declared(key: str) -> Setting | None:
    """The declaration of a setting named as `tfyarn config` names it (appConfig's
    site.global.*, every component's yarn.*, a component's own <component>.yarn.*, the
    AppMaster's slider-appmaster.yarn.*); None: no such setting."""
    first, _, rest = key.partition(".")
    if key.startswith(APP_PREFIX):
        scope, name = APP_SCOPE, key
    elif first == APPMASTER:
        scope, name = APPMASTER_SCOPE, rest
    else:
        scope, name = COMPONENT_SCOPE, rest if first in COMPONENT_NAMES else key
        if first not in COMPONENT_NAMES and key in resources.JOB_KEYS:
            scope = JOB_SCOPE  # the whole job's, in resources.json's global
    return next((s for s in settings(scope) if s.key == name), None)


def parse_set(text: str) -> Override:
    """`KEY=VALUE` of --set, checked: a known key, and a value (a list or an object as JSON,
    for the keys that hold one)."""
    option = f"--set {text}"
    raw_key, equals, raw_value = text.partition("=")
    key = raw_key.strip()
    for prefix in ("components.", "global."):  # the job files' own way to name it
        key = key.removeprefix(prefix)
    if not equals or not key:
        raise _refused(option, "not KEY=VALUE", "write e.g. --set "
                       f"components.worker.{INSTANCES.key}=8 or --set "
                       f"{QUEUE.key}=ml ({LISTS_THE_KEYS}).")
    if declared(key) is None:
        match = difflib.get_close_matches(key, _keys(), n=1)
        # in the user's own form: components.worker.… stays so
        written = raw_key.strip()[: len(raw_key.strip()) - len(key)] if match else ""
        fix = (f'did you mean "{written}{match[0]}"? ({LISTS_THE_KEYS})' if match else
               f"{LISTS_THE_KEYS}; a component's own is <component>.<key>.")
        raise _refused(option, f'unknown key "{raw_key.strip()}"', fix)
    return Override(key, _value(key, raw_value.strip()), f"--set {raw_key.strip()}")


def _value(key: str, raw: str) -> Any:
    """The text as the files would hold it: JSON for a list or an object, else the string
    (numbers as strings are what Slider wrote, and every check takes them)."""
    setting = declared(key)
    if setting is not None and setting.kind in ("list", "map") and raw[:1] in "[{":
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            pass  # kept as text: the setting's check says what is wrong with it
    return raw


def _refused(option: str, message: str, fix: str) -> JobConfigError:
    return JobConfigError([Problem(COMMAND_LINE, option, None, message, fix)])


def apply(overrides: Sequence[Override], resources_doc: dict[str, Any] | None,
          app_doc: dict[str, Any] | None, problems: list[Problem]
          ) -> tuple[dict[str, str], dict[str, str]]:
    """Put each override where the job files hold it. The documents' sections it writes to
    are replaced by copies (the dicts passed in change, what they held does not); a section
    that is no object is left for the files' checks to report. Returns, for resources.json
    and for appConfig.json, the key paths each landed at -> its option, so that problems
    there name the option."""
    app_global = _copied(app_doc, "global")
    resources_global = _copied(resources_doc, "global")
    components = _copied(resources_doc, "components")
    for name, own in (components or {}).items():
        if isinstance(own, dict):
            components[name] = dict(own)
    in_resources: dict[str, str] = {}
    in_app: dict[str, str] = {}
    for o in overrides:
        if o.key.startswith(APP_PREFIX):
            if app_global is not None:
                rival = appconfig.RIVAL_KEYS.get(o.key)
                if rival is not None:  # the one given wins, as in the defaults files
                    app_global.pop(rival, None)
                app_global[o.key] = o.value
                in_app[key_path("global", o.key)] = o.option
        elif components is None:
            continue
        elif o.component is not None:
            own = components.get(o.component)
            if not isinstance(own, dict) and o.component != APPMASTER:
                problems.append(Problem(
                    COMMAND_LINE, o.option, None, f"resources.json has no {o.component} "
                    "component", f'add "{o.component}" to resources.json with its '
                    f'"{PRIORITY.key}", then set its keys here.'))
                continue
            own = components.setdefault(o.component, {}) if own is None else own
            own[o.setting_key] = o.value
            in_resources[key_path("components", o.component, o.setting_key)] = o.option
        elif resources_global is not None:
            # every component's: in "global", and over each component's own value; a check of
            # one component's value (against its other settings) names the option too
            resources_global[o.key] = o.value
            in_resources[key_path("global", o.key)] = o.option
            for name, own in components.items():
                if isinstance(own, dict):
                    if o.key in own:
                        own[o.key] = o.value
                    in_resources[key_path("components", name, o.key)] = o.option
    return in_resources, in_app


def _copied(doc: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
    """The document's section ``name``, replaced by a copy to write into (an absent or empty
    one by {}); None when there is no document or the section is no object."""
    if doc is None:
        return None
    section = doc.get(name)
    if section is not None and not isinstance(section, dict):
        return None
    doc[name] = copy = dict(section or {})
    return copy


class OverriddenChecker(Checker):
    """A job file's checker whose problems at a key the command line set name the option."""

    def __init__(self, file: str, problems: list[Problem], landed: dict[str, str]) -> None:
        super().__init__(file, problems)
        self.landed = landed

    def add(self, key: str | None, message: str, fix: str, value: Any = NO_VALUE) -> None:
        for path, option in self.landed.items():
            if key is not None and (key == path or key.startswith(path + ".")):
                Checker(COMMAND_LINE, self.problems).add(option + key[len(path):], message,
                                                         fix, value)
                return
        super().add(key, message, fix, value)
