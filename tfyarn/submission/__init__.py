"""From a checked job to a YARN application: the plan, the shipped environment and code,
the pre-flight check against the cluster, and the skein spec that submits it."""
