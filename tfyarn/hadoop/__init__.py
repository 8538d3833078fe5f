"""Talking to a Hadoop cluster: its client configuration, the ResourceManager's REST API and
skein's Java driver."""
