"""Proof that a fresh local cluster runs containers: a tiny skein application.

Registered NodeManagers with free memory are not yet proof that the scheduler places
containers, in the default partition and in the `gpu` one. This submits what tfyarn
itself submits, a skein application with one container per partition, and ends it with
SUCCEEDED once both run. Run as `python -m tfyarn.localyarn.probe` in the cluster's
client environment (skein's driver finds YARN through `yarn classpath`).
"""

from __future__ import annotations

import contextlib
import queue
import shlex
import sys
import time

from tfyarn.localyarn.layout import GPU_LABEL

PROBE_NAME = "tfyarn-cluster-probe"
TIMEOUT_S = 90.0
RAN_KEY = "ran/"  # each service puts ran/<service> in the KV store once it runs


def probe_spec():
    import skein

    from tfyarn.jvm import QUICK_JVM_OPTIONS

    def service(name: str, label: str) -> tuple[str, skein.Service]:
        # skein calls a container RUNNING once the NodeManager accepted it, before it is
        # localized: the process itself reports in, with this Python (as a job's tasks run).
        report_in = (f"{shlex.quote(sys.executable)} -m skein.cli kv put current "
                     f"--key {RAN_KEY}{name} --value \"$(hostname)\"")
        return name, skein.Service(resources=skein.Resources(memory=128, vcores=1),
                                   script=f"{report_in} && sleep {TIMEOUT_S:.0f}",
                                   node_label=label, max_restarts=0)

    return skein.ApplicationSpec(
        name=PROBE_NAME,
        tags=["tfyarn-probe"],
        queue="default",
        max_attempts=1,
        services=dict([service("default_partition", ""),
                       service(f"{GPU_LABEL}_partition", GPU_LABEL)]),
        master=skein.Master(resources=skein.Resources(memory=256, vcores=1),
                            env={"JAVA_TOOL_OPTIONS": QUICK_JVM_OPTIONS}),
    )


def run_probe(timeout_s: float = TIMEOUT_S) -> str:
    """The probe application's id once each service's container ran (the application is then
    ended SUCCEEDED); otherwise it is killed and a RuntimeError says why."""
    from tfyarn.driver import skein_client

    spec = probe_spec()
    with skein_client() as client:
        app_id = client.submit(spec)
        deadline = time.monotonic() + timeout_s
        try:
            while (state := str(client.application_report(app_id).state)) != "RUNNING":
                if state in ("FINISHED", "FAILED", "KILLED") or time.monotonic() > deadline:
                    raise RuntimeError(f"{app_id} ({PROBE_NAME}) is {state}: its AppMaster did "
                                       f"not start (waited up to {timeout_s:.0f} s).")
                time.sleep(0.1)
            app = client.connect(app_id)
            reports = app.kv.event_queue()
            reports.subscribe(prefix=RAN_KEY, event_type="PUT")
            ran = {key.removeprefix(RAN_KEY) for key in app.kv.get_prefix(RAN_KEY)}
            while ran != set(spec.services):
                try:
                    event = reports.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    raise RuntimeError(
                        f"{app_id} ({PROBE_NAME}): after {timeout_s:.0f} s, containers ran for "
                        f"{sorted(ran) or 'no partition'} of {sorted(spec.services)}.") from None
                ran.add(event.key.removeprefix(RAN_KEY))
            app.shutdown("SUCCEEDED", "a container ran in each partition")
        except Exception as exc:
            diagnostics = client.application_report(app_id).diagnostics or "(none)"
            with contextlib.suppress(Exception):  # it may have ended by itself
                client.kill_application(app_id)
            raise RuntimeError(f"{exc}\nYARN's diagnostics: {diagnostics}") from exc
    return app_id


def main() -> int:
    try:
        app_id = run_probe()
    except Exception as exc:  # the caller shows this with the daemons' logs
        print(str(exc), file=sys.stderr)
        return 1
    print(app_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
