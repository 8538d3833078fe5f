"""Proof that a fresh local cluster runs containers: a tiny skein application.

Registered NodeManagers with free memory are not yet proof that the scheduler places
containers, in the default partition and in the `gpu` one. This submits what tfyarn
itself submits, a skein application, with one `true` container per partition, and
waits for it to succeed. Run as `python -m tfyarn.localyarn.probe` in the cluster's
client environment (skein's driver finds YARN through `yarn classpath`).
"""

from __future__ import annotations

import sys
import time

from tfyarn.localyarn.layout import GPU_LABEL

PROBE_NAME = "tfyarn-cluster-probe"
TIMEOUT_S = 90.0
FINAL_STATES = ("FINISHED", "FAILED", "KILLED")


def probe_spec():
    import skein

    from tfyarn.submit import QUICK_JVM_OPTIONS

    def service(label: str) -> skein.Service:
        return skein.Service(resources=skein.Resources(memory=128, vcores=1), script="true",
                             node_label=label, max_restarts=0)

    return skein.ApplicationSpec(
        name=PROBE_NAME,
        tags=["tfyarn-probe"],
        queue="default",
        max_attempts=1,
        services={"default_partition": service(""), f"{GPU_LABEL}_partition": service(GPU_LABEL)},
        master=skein.Master(resources=skein.Resources(memory=256, vcores=1),
                            env={"JAVA_TOOL_OPTIONS": QUICK_JVM_OPTIONS}),
    )


def run_probe(timeout_s: float = TIMEOUT_S) -> str:
    """The probe application's id once it SUCCEEDED; RuntimeError saying why otherwise."""
    from tfyarn.submit import skein_client

    with skein_client() as client:
        app_id = client.submit(probe_spec())
        deadline = time.monotonic() + timeout_s
        while True:
            report = client.application_report(app_id)
            if str(report.state) in FINAL_STATES:
                break
            if time.monotonic() > deadline:
                client.kill_application(app_id)
                raise RuntimeError(
                    f"{app_id} ({PROBE_NAME}) still {report.state} after {timeout_s:.0f} s: "
                    "YARN did not run one small container in each partition. "
                    f"Diagnostics: {report.diagnostics or '(none)'}")
            time.sleep(0.25)
    if str(report.final_status) != "SUCCEEDED":
        raise RuntimeError(f"{app_id} ({PROBE_NAME}) ended {report.state}/{report.final_status}: "
                           f"{report.diagnostics}")
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
