"""The agent in every task's container (`main`): the task's port, its script, heartbeats,
the work dir's mirror to HDFS, progress from TensorFlow event files."""
