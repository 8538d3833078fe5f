"""tfyarn: run distributed TensorFlow on Hadoop YARN with one command.

As a library::

    import tfyarn
    app_id = tfyarn.submit("resources.json", "appConfig.json", queue="default")

`submit` is tfyarn/api.py's; errors are tfyarn.errors.TfyarnError.
"""

import importlib

__version__ = "0.1.0"
__all__ = ["__version__", "submit"]

# The package's `submit` is the function, yet tfyarn/submit.py (skein's driver) is a module
# of that name, and importing a submodule sets the package's attribute to it. So that module
# (light) is loaded here, once, and the attribute dropped: `submit` then always comes from
# __getattr__ below, which loads the pipeline only when it is first used.
importlib.import_module("tfyarn.submit")
del globals()["submit"]


def __getattr__(name: str):
    if name == "submit":
        from tfyarn.api import submit

        globals()["submit"] = submit
        return submit
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
