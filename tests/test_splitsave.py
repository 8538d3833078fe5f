"""What a chief whose checkpoint was saved from the ps's hosts is told
(appmaster/agent/splitsave.py): the stderr tail below is the one TensorFlow 2.21 wrote in
tests/test_keras_yarn.py's run of its parameter-server tutorial's ModelCheckpoint on the local
YARN (paths shortened)."""

from __future__ import annotations

from appmaster.agent.splitsave import CHIEF_CPU, split_save_hint

PREFIX = "/nm2/local/usercache/root/appcache/app_1/container_1/work/checkpoints/ckpt-1"
TAIL = f"""  File "functional_saver.py", line 557, in tf_function_save

2 root error(s) found.
  (0) NOT_FOUND:   {PREFIX}_temp; No such file or directory
\t [[{{{{node SaveV2}}}}]]
Additional GRPC error information from remote target /job:ps/replica:0/task:0/device:CPU:0 \
while calling /tensorflow.eager.EagerService/RunComponentFunction:
:UNKNOWN:Error received from peer  {{grpc_status:5, grpc_message:" {PREFIX}_temp; No such file \
or directory\\n\\t [[{{{{node SaveV2}}}}]]"}}
0 successful operations.
0 derived errors ignored. [Op:__inference_tf_function_save_853]
"""


def test_a_save_that_failed_on_a_ps_host_gets_the_fix() -> None:
    hint = split_save_hint(TAIL)
    assert hint.startswith(f"tfyarn: checkpoint {PREFIX} was saved from the ps"), hint
    assert f'experimental_io_device="{CHIEF_CPU}"' in hint and "keras.md" in hint, hint


def test_other_failures_get_no_hint() -> None:
    assert split_save_hint("FileNotFoundError: /data/x") == ""
    # A missing directory on the chief's own host: no ps in it.
    assert split_save_hint(f"NOT_FOUND: {PREFIX}_temp; No such file or directory\n"
                           "[[{{node SaveV2}}]]") == ""
