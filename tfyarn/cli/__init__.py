"""The `tfyarn` command: click groups that parse options and call the floors below."""
