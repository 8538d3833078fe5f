"""The AppMaster's I/O: skein's driver script (`main`), the agents' rendezvous, attempts."""
