"""tfyarn: run distributed TensorFlow on Hadoop YARN with one command."""

__version__ = "0.1.0"
