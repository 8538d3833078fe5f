"""Proof that a fresh local cluster runs containers: a tiny skein application.

Registered NodeManagers with free memory are not yet proof that the scheduler places
containers, in the default partition and in the `gpu` one. This submits what tfyarn
itself submits, a skein application with one container per partition; each runs a shell
line (the nodes are bare: no Python of the client's there), and skein's AppMaster ends the
application SUCCEEDED once both have run and exited 0. Run as
`python -m tfyarn.localyarn.probe` in the cluster's client environment (skein's driver
finds YARN through `yarn classpath`).
"""

from __future__ import annotations

import contextlib
import sys
import time

from tfyarn.localyarn.layout import GPU_LABEL

PROBE_NAME = "tfyarn-cluster-probe"
TIMEOUT_S = 90.0


def probe_spec():
    import skein

    from tfyarn.hadoop.jvm import QUICK_JVM_OPTIONS

    def service(name: str, label: str) -> tuple[str, skein.Service]:
        return name, skein.Service(resources=skein.Resources(memory=128, vcores=1),
                                   script='echo "ran on $(hostname)"',
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
    from tfyarn.hadoop.driver import skein_client

    spec = probe_spec()
    with skein_client() as client:
        app_id = client.submit(spec)
        deadline = time.monotonic() + timeout_s
        try:
            while str((report := client.application_report(app_id)).state) not in (
                    "FINISHED", "FAILED", "KILLED"):
                if time.monotonic() > deadline:
                    ran = [c.service_name for c in client.connect(app_id).get_containers(
                        states=["SUCCEEDED"])] if str(report.state) == "RUNNING" else []
                    raise RuntimeError(
                        f"{app_id} ({PROBE_NAME}) is {report.state} after {timeout_s:.0f} s: "
                        f"containers ran for {sorted(ran) or 'no partition'} of "
                        f"{sorted(spec.services)}.")
                time.sleep(0.2)
            if str(report.final_status) != "SUCCEEDED":
                raise RuntimeError(f"{app_id} ({PROBE_NAME}) ended {report.final_status}.")
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
