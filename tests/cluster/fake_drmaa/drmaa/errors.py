"""Exceptions with the names of the drmaa binding's (drmaa.errors)."""


class DrmaaException(Exception):
    pass


class AlreadyActiveSessionException(DrmaaException):
    pass


class InternalException(DrmaaException):
    pass


class DeniedByDrmException(DrmaaException):
    pass


class InvalidAttributeValueException(DrmaaException):
    pass


class InvalidJobException(DrmaaException):
    pass


class ExitTimeoutException(DrmaaException):
    pass
