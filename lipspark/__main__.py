"""``python -m lipspark``: the ``lipspark`` command (:func:`lipspark.cli.console`)."""
from lipspark.cli import console

console()
