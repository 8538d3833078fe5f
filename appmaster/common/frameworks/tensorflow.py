"""TensorFlow: Slider's flags and TF_CONFIG (appmaster/common/cluster_spec.py); a ps, workers, the
chief, an evaluator beside them; a failed plain worker replaced alone; checkpoints under a
``checkpoint`` state file (appmaster/agent/mirror.py)."""

from appmaster.common.frameworks.base import FrameworkTraits, Words
from appmaster.common.vocabulary import Framework, Role

TENSORFLOW = FrameworkTraits(
    word=Framework.TENSORFLOW, title="TensorFlow", package=None, ranks=False,
    words=Words(cluster="TensorFlow cluster", checkpoint="checkpoint", task="task",
                chief="the chief", step="global step"),
    flex_roles=(Role.PS, Role.WORKER), steps_also_from="the chief's TensorFlow summaries",
    work_dir_flag="--work_dir")
