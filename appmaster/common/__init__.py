"""What the AppMaster, every container's agent and the client share: the settings' declarations,
the job plan, the words (vocabulary), the registry's keys, HDFS storage, GPUs, the agents' link."""
