"""The TensorFlow cluster as every task sees it: addresses, flags and TF_CONFIG.

Roles follow Slider's TensorFlow package: ``ps``, ``chiefworker`` and ``worker``.
Legacy scripts get ``--ps_hosts/--worker_hosts/--job_name/--task_index``, where
``worker_hosts`` lists the chief first and the chief runs as ``worker`` task 0.
TF2 scripts read ``TF_CONFIG``, where the chief is its own ``chief`` task type and
plain workers are numbered from 0.

A job without a ``chiefworker`` (Slider's own package) has workers only: ``worker_hosts`` lists
them, worker 0 is the chief, and ``TF_CONFIG`` has no ``chief``, which TensorFlow reads the
same way (worker 0 is then its chief).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from appmaster.common.vocabulary import Role


@dataclass(frozen=True)
class ClusterSpec:
    """``host:port`` of every task, by role and task index."""

    ps: tuple[str, ...] = ()
    chief: tuple[str, ...] = ()
    workers: tuple[str, ...] = field(default=())

    def addresses(self, role: str) -> tuple[str, ...]:
        return {Role.PS: self.ps, Role.CHIEFWORKER: self.chief, Role.WORKER: self.workers}[role]

    def flags(self, role: str, index: int, work_dir: str | None = None,
              data_dir: str | None = None, work_dir_flag: str = "--work_dir") -> list[str]:
        """The command-line flags of Slider's convention for one task: its four, then
        ``--data_dir`` and the work dir (``--ckp_dir`` in Slider's package) when given;
        ``work_dir_flag`` "": no work dir flag."""
        if role == Role.PS:
            job_name, task_index = "ps", index
        elif role == Role.CHIEFWORKER:
            job_name, task_index = "worker", index
        elif role == Role.WORKER:
            job_name, task_index = "worker", len(self.chief) + index
        elif role == Role.EVALUATOR:  # not in the host lists: it only reads checkpoints
            job_name, task_index = "evaluator", index
        else:
            raise ValueError(f"unknown role {role!r}")
        flags = [
            f"--ps_hosts={','.join(self.ps)}",
            f"--worker_hosts={','.join(self.chief + self.workers)}",
            f"--job_name={job_name}",
            f"--task_index={task_index}",
        ]
        if data_dir is not None:
            flags.append(f"--data_dir={data_dir}")
        if work_dir is not None and work_dir_flag:
            flags.append(f"{work_dir_flag}={work_dir}")
        return flags

    def tf_config(self, role: str, index: int) -> dict:
        """TF_CONFIG for one task: the chief is type ``chief``, workers count from 0; the
        evaluator is type ``evaluator``, outside the cluster it is told of."""
        by_type = (("chief", self.chief), ("worker", self.workers), ("ps", self.ps))
        cluster = {name: list(addresses) for name, addresses in by_type if addresses}
        task_type = {Role.PS: "ps", Role.CHIEFWORKER: "chief", Role.WORKER: "worker",
                     Role.EVALUATOR: "evaluator"}[role]
        return {"cluster": cluster, "task": {"type": task_type, "index": index}}

    def to_dict(self) -> dict[str, list[str]]:
        return {Role.PS.value: list(self.ps), Role.CHIEFWORKER.value: list(self.chief),
                Role.WORKER.value: list(self.workers)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str | bytes) -> ClusterSpec:
        data = json.loads(text)
        return cls(
            ps=tuple(data.get(Role.PS, ())),
            chief=tuple(data.get(Role.CHIEFWORKER, ())),
            workers=tuple(data.get(Role.WORKER, ())),
        )

    @classmethod
    def from_exports(cls, exports: dict[str, dict[int, str]]) -> ClusterSpec:
        """Build from ``{role: {task_index: "host:port"}}``, ordered by task index."""

        def ordered(role: str) -> tuple[str, ...]:
            by_index = exports.get(role, {})
            return tuple(by_index[i] for i in sorted(by_index))

        return cls(ps=ordered(Role.PS), chief=ordered(Role.CHIEFWORKER),
                   workers=ordered(Role.WORKER))
