"""The job model: pure decisions from events (no I/O, no clock), run by the AppMaster and read by
the client through the page's view of it."""
