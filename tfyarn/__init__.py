"""tfyarn: run distributed TensorFlow on Hadoop YARN with one command.

As a library::

    import tfyarn
    app_id = tfyarn.submit("resources.json", "appConfig.json", queue="default")

`submit` is tfyarn/submission/api.py's; errors are tfyarn.errors.TfyarnError.
"""

__version__ = "0.1.0"
__all__ = ["__version__", "submit"]


def __getattr__(name: str):
    """`submit` loads the pipeline only when it is first used: `import tfyarn` stays light."""
    if name == "submit":
        from tfyarn.submission.api import submit

        globals()["submit"] = submit
        return submit
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
