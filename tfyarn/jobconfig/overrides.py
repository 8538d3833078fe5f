"""Settings given on the command line: `--set KEY=VALUE`, and the options that stand for one
setting (`--queue`, `--name`, `--am-memory`, `--am-vcores`).

They beat every file. Each lands where the job files would hold it, so that the same checks
judge it; a problem with it names the option the user typed, not a file. A key is named as
`tfyarn config` prints it: `site.global.queue`, `yarn.memory` (every component),
`worker.yarn.component.instances` (one component's; `components.worker.…` too).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from appmaster.settings import APP_PREFIX
from appmaster.settings import setting as declaration
from tfyarn.jobconfig import appconfig, resources
from tfyarn.jobconfig.documents import COMMAND_LINE, NO_VALUE, Checker, key_path
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
    every = [*appconfig.APP_KEYS, *resources.RESOURCE_KEYS]
    own = [f"{name}.{key}" for name in COMPONENT_NAMES if name != APPMASTER
           for key in resources.RESOURCE_KEYS]
    return [*every, *own, *(f"{APPMASTER}.{k}" for k in resources.APPMASTER_KEYS)]


def _known(key: str) -> bool:
    if key.startswith(APP_PREFIX):
        return key in appconfig.APP_KEYS
    first, _, rest = key.partition(".")
    if first == APPMASTER:
        return rest in resources.APPMASTER_KEYS
    if first in COMPONENT_NAMES:
        return rest in resources.RESOURCE_KEYS
    return key in resources.RESOURCE_KEYS


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
                       "components.worker.yarn.component.instances=8 or --set "
                       "site.global.queue=ml (`tfyarn config` lists the keys).")
    if not _known(key):
        match = difflib.get_close_matches(key, _keys(), n=1)
        fix = (f'did you mean "{match[0]}"?' if match else
               "`tfyarn config` lists the keys; a component's own is <component>.<key>.")
        raise _refused(option, f'unknown key "{raw_key.strip()}"', fix)
    return Override(key, _value(key, raw_value.strip()), f"--set {raw_key.strip()}")


def _value(key: str, raw: str) -> Any:
    """The text as the files would hold it: JSON for a list or an object, else the string
    (numbers as strings are what Slider wrote, and every check takes them)."""
    name = key.split(".", 1)[1] if key.split(".")[0] in COMPONENT_NAMES else key
    scope = "app" if name.startswith(APP_PREFIX) else None
    kind = declaration(name, scope).kind if scope or name in resources.RESOURCE_KEYS else ""
    if kind in ("list", "map") and raw[:1] in "[{":
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
    """Put each override where the job files hold it (the documents change in place). Returns,
    for resources.json and for appConfig.json, the key paths it landed at -> its option, so
    that problems there name the option."""
    in_resources: dict[str, str] = {}
    in_app: dict[str, str] = {}
    for o in overrides:
        if o.key.startswith(APP_PREFIX):
            if app_doc is not None:
                section = _section(app_doc, "global")
                rival = appconfig.RIVAL_KEYS.get(o.key)
                if rival is not None:  # the one given wins, as in the defaults files
                    section.pop(rival, None)
                section[o.key] = o.value
                in_app[key_path("global", o.key)] = o.option
            continue
        if resources_doc is None:
            continue
        components = _section(resources_doc, "components")
        if o.component is not None:
            own = components.get(o.component)
            if not isinstance(own, dict) and o.component != APPMASTER:
                problems.append(Problem(
                    COMMAND_LINE, o.option, None, f"resources.json has no {o.component} "
                    "component", f'add "{o.component}" to resources.json with its '
                    '"yarn.role.priority", then set its keys here.'))
                continue
            own = components.setdefault(o.component, {}) if own is None else own
            own[o.setting_key] = o.value
            in_resources[key_path("components", o.component, o.setting_key)] = o.option
            continue
        # every component's: in "global", and over each component's own value
        _section(resources_doc, "global")[o.key] = o.value
        in_resources[key_path("global", o.key)] = o.option
        for name, own in components.items():
            if isinstance(own, dict) and o.key in own:
                own[o.key] = o.value
                in_resources[key_path("components", name, o.key)] = o.option
    return in_resources, in_app


def _section(doc: dict[str, Any], name: str) -> dict[str, Any]:
    """A document's section to write into (a copy: the caller's document is not changed)."""
    section = doc.get(name)
    doc[name] = section = dict(section) if isinstance(section, dict) else {}
    if name == "components":
        for key, value in section.items():
            section[key] = dict(value) if isinstance(value, dict) else value
    return section


def flat(overrides: Sequence[Override]) -> dict[str, Any]:
    """The overrides keyed as `tfyarn config` shows settings, the last one of a key winning."""
    return {o.key: o.value for o in overrides}


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
