"""Constants with the names and values of the drmaa binding's (drmaa.const)."""


class JobState:
    UNDETERMINED = "undetermined"
    QUEUED_ACTIVE = "queued_active"
    SYSTEM_ON_HOLD = "system_on_hold"
    USER_ON_HOLD = "user_on_hold"
    USER_SYSTEM_ON_HOLD = "user_system_on_hold"
    RUNNING = "running"
    SYSTEM_SUSPENDED = "system_suspended"
    USER_SUSPENDED = "user_suspended"
    USER_SYSTEM_SUSPENDED = "user_system_suspended"
    DONE = "done"
    FAILED = "failed"


class JobControlAction:
    SUSPEND = "suspend"
    RESUME = "resume"
    HOLD = "hold"
    RELEASE = "release"
    TERMINATE = "terminate"
