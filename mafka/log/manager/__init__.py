"""The broker's log directories: :class:`LogManager` and the names callers need beside it.

The manager is split by concern (see :mod:`mafka.log.manager.log_manager` for
the contract and the module map); callers import from here only.
"""

from __future__ import annotations

from ..dir_names import (
    DELETE_DIR_SUFFIX,
    FUTURE_DIR_SUFFIX,
    InvalidLogDirectoryError,
    log_delete_dir_name,
    log_dir_name,
    log_future_dir_name,
    parse_log_dir_name,
)
from .dirs import CLEAN_SHUTDOWN_FILE, LOCK_FILE, LogDirLockedError
from .log_manager import LogManager
from .moves import FUTURE_COMPLETE_MARKER

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "DELETE_DIR_SUFFIX",
    "FUTURE_DIR_SUFFIX",
    "LOCK_FILE",
    "InvalidLogDirectoryError",
    "LogDirLockedError",
    "LogManager",
    "FUTURE_COMPLETE_MARKER",
    "log_delete_dir_name",
    "log_dir_name",
    "log_future_dir_name",
    "parse_log_dir_name",
]
