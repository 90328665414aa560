"""The two error types of bad input: a data file's (file, field and fix) and a config key's."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input data or configuration: names what is wrong, where, and how to fix it."""

    def __init__(self, where: str, field: str, problem: str, fix: str):
        self.where, self.field, self.problem, self.fix = where, field, problem, fix
        super().__init__(f"{where}: field '{field}': {problem}. Fix: {fix}")


class ConfigError(ValueError):
    """A config value the workflow cannot use: one line naming the key, the problem and what is allowed.

    Here rather than in :mod:`locpriv.config` so that the checks config calls (``locpriv.sanity``)
    raise it without importing config back.
    """
