"""The transport to a model used as a judge: it knows no judge.

Backends (the ``openai`` SDK for any OpenAI-compatible endpoint, transformers for a local
``hf`` model) behind one protocol, the one client that caches every completion before it
is used, limits rate and concurrency, retries, de-duplicates identical requests in flight
and stops after refused credentials; context windows, endpoint normalisation and
credential redaction. It imports nothing from judges, tasks, report or the CLI (an
import-linter contract in ``make lint`` enforces it): the judge families above it decide
what to ask, this layer only how.
"""
