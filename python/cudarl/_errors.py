"""The exceptions of the package and the check of a C status."""
from . import _lib


class Error(RuntimeError):
    """A failure the C library reported: `status` is its code's name ("CUDARL_ERR_IO"), the
    message its cudarl_last_error(), which names the problem and the fix."""

    def __init__(self, status, message):
        self.status = status
        super().__init__("%s: %s" % (status, message))


def check(status):
    """Raises for a C status other than CUDARL_OK: ValueError for CUDARL_ERR_INVALID_ARG (a bad
    value the caller passed), else cudarl.Error."""
    if status != 0:
        name = _lib.status_name(status).decode()
        message = _lib.last_error().decode(errors="replace")
        if name == "CUDARL_ERR_INVALID_ARG":
            raise ValueError(message)
        raise Error(name, message)
