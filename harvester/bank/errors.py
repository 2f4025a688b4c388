"""The bank's own errors, beside :class:`~harvester.capture.contract.BankError` (the contract's: the bank cannot
be opened or written), which they refine. Here, not in the package's ``__init__``: the SQLite bank raises them, and
the ``__init__`` opens the SQLite bank."""

from __future__ import annotations

from harvester.capture.contract import BankError


class NotABank(BankError):
    """The bank path holds a file that is not a harvester bank: it is refused, and left untouched."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path} is not a harvester bank: {why}. It was not changed; "
                         "give --bank (or HARVESTER_BANK) a new file or an existing bank")


class NoBank(BankError):
    """Nothing to read yet: no bank at the path (or an empty file). A reading command never makes one (a typo in
    ``--bank`` must not leave a new bank behind); the first ``scan`` or ``run`` does."""

    def __init__(self, path: str) -> None:
        super().__init__(f"no bank at {path} yet")
        self.path = path


class BankNewer(BankError):
    """The bank was written by a newer harvester: refused for writing, readable read-only."""

    def __init__(self, version: int, known: int, path: str) -> None:
        super().__init__(f"the bank at {path} was written by a newer harvester (schema {version}; this version "
                         f"knows up to {known}): upgrade harvester to write to it")
