"""One error type for bad input, with the file, field and fix in the message."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input data or configuration: names what is wrong, where, and how to fix it."""

    def __init__(self, where: str, field: str, problem: str, fix: str):
        self.where, self.field, self.problem, self.fix = where, field, problem, fix
        super().__init__(f"{where}: field '{field}': {problem}. Fix: {fix}")
