#!/usr/bin/env bash
# The main job, start to finish: set up, start the local YARN, run the seed job
# (1 ps, 1 chief, 2 workers on the gpu-labelled node) and wait for it to succeed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --for main  # JDK, Maven, .venv with tfyarn[tf]: no test tools
. .venv/bin/activate
tfyarn cluster up
eval "$(tfyarn cluster env)"
tfyarn submit --resources resources.json --app-config appConfig.json --wait
