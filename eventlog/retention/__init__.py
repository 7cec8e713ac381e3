"""Retention an auditor accepts, and legal holds: `RetentionStore` (``log.retention``).

Decisions (which records a policy lets go, the holds a tenant's events fold to) are in
`decisions`, without I/O; the store in `store`; policy files (many tenants at once) in
`policy`.
"""

from eventlog.retention.decisions import LegalHold, RetentionPolicy, check_policy
from eventlog.retention.store import Erase, PurgedRecords, RetentionReport, RetentionStore

__all__ = [
    "Erase",
    "LegalHold",
    "PurgedRecords",
    "RetentionPolicy",
    "RetentionReport",
    "RetentionStore",
    "check_policy",
]
