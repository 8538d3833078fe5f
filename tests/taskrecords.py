"""What each task of a job wrote about itself (tests/apps' flags files): the flags and
TF_CONFIG it was started with, and the work dir it got."""

from __future__ import annotations

from typing import Any

from jobtools import JobFiles, read_json


def flags_records(files: JobFiles) -> dict[str, dict[str, Any]]:
    """Each task's first record, from its own container's local work dir; with the dir it got
    (a restarted task's own, <name>.attempt<N>.json, are left out)."""
    records = {}
    for path in files.glob("flags/*.json"):
        if ".attempt" in path.name:
            continue
        records[path.stem] = read_json(path)
        records[path.stem]["own_work_dir"] = str(path.parent.parent)
    return records


def assert_tf2_records(files: JobFiles, tasks: dict[str, tuple[str, int]],
                       script_args: list[str]) -> None:
    """Each task's TF_CONFIG matches its role and agrees with the legacy flags it was given.

    `tasks`: flags file name (TF_CONFIG type_index) -> (TFYARN_ROLE, index).
    """
    records = flags_records(files)
    assert set(records) == set(tasks), sorted(records)
    clusters = [r["tf_config"]["cluster"] for r in records.values()]
    assert all(c == clusters[0] for c in clusters)
    spec = clusters[0]
    for name, (role, index) in tasks.items():
        record = records[name]
        task_type = name.rsplit("_", 1)[0]
        assert record["tf_config"]["task"] == {"type": task_type, "index": index}, name
        assert (record["tfyarn_role"], record["tfyarn_task_index"]) == (role, index), name
        assert len(spec[task_type]) > index
        job_name = "ps" if role == "ps" else "worker"
        task_index = index + (len(spec.get("chief", [])) if role == "worker" else 0)
        assert record["argv"] == [
            f"--ps_hosts={','.join(spec.get('ps', []))}",
            f"--worker_hosts={','.join(spec.get('chief', []) + spec.get('worker', []))}",
            f"--job_name={job_name}", f"--task_index={task_index}",
            f"--work_dir={record['own_work_dir']}", *script_args,
        ], name
