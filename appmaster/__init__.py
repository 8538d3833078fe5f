"""Code that runs inside YARN: the ApplicationMaster and the per-container agent."""
