"""Writing the files of a run so that none is ever half-written and looks
complete (issue 30): each is written beside its final name, then renamed
over it (rename is atomic within a filesystem), and a write that fails
(a full disk, a read-only or vanished directory) removes what it wrote
and raises DiskError naming the file.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

# errors of the storage itself, after which no later write can succeed
# either: the run stops (bench-all) rather than turning into error rows
STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG}


class DiskError(OSError):
    """Writing `filename` failed for want of storage. str(): one line for
    people, naming the file and what to do."""

    def __str__(self) -> str:
        what = os.strerror(self.errno).lower() if self.errno else "write failed"
        where = self.filename or "?"
        advice = ("free some space on its filesystem (df -h) and run again"
                  if self.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
                  else "check the filesystem it is on and run again")
        return f"{where}: {what}: {advice}"


def is_storage_error(e: BaseException) -> bool:
    return isinstance(e, OSError) and e.errno in STORAGE_ERRNOS


def storage_error(e: OSError, path) -> DiskError:
    """`e` as a DiskError naming `path` (or the file `e` names itself); a
    DiskError as it is."""
    if isinstance(e, DiskError):
        return e
    return DiskError(e.errno, e.strerror, str(e.filename or path))


@contextlib.contextmanager
def replacing(path):
    """Yields a temporary path beside `path` for a writer that wants a file
    name (pyarrow, matplotlib); renames it to `path` when the block ends
    without an error, else removes it. Storage errors become DiskError."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        if is_storage_error(e):
            raise storage_error(e, path) from None
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path, data: str | bytes) -> None:
    """Writes `data` (text as UTF-8) to `path` through a temporary file
    and a rename: `path` holds the old content or the new, never a part."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with replacing(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
