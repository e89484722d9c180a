"""lm-eval-elitr: meeting-assistant benchmarks for lm-evaluation-harness.

Kept import-free on purpose: the start-up hook imports this package in every
interpreter, so anything heavy here would slow down every Python process.
"""

__version__ = "0.1.0"
