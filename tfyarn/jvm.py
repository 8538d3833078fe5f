"""Options for the JVMs that live a short while: skein's driver, its AppMaster, the probe.

A module of its own so that both the submitting side (tfyarn/submit.py) and the spec it
submits (tfyarn/appspec.py) can read them without importing each other.
"""

# Start fast, stay lean: C1 only, the serial collector.
QUICK_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
