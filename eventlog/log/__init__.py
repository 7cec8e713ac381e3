"""The event log: append with optimistic concurrency, read, query views, verify.

`EventLog` (`_log`) is what stores, the CLI and applications hold. Behind it, one module
per seam: `_append` chains and commits appends (the retry loop and commit-outcome
resolution), `_heads` caches stream heads, `_chain` verifies hash chains, `_tree` keeps
each tenant's transparency tree. Only this package and `eventlog.opening` touch a storage
backend. `_spill` holds
`SpilledViews`, where a rebuild of a whole large log folds its views.
"""

from eventlog.log._log import EventLog
from eventlog.log._signed import StreamLink
from eventlog.log._spill import SpilledViews
from eventlog.log._subscribe import Subscription
from eventlog.log._tree import TreeFinding
from eventlog.storage.contracts.keys import KeyringRow, KeyRow
from eventlog.validation import DEFAULT_MAX_PAYLOAD_BYTES

__all__ = ["DEFAULT_MAX_PAYLOAD_BYTES", "EventLog", "KeyRow", "KeyringRow", "SpilledViews",
           "StreamLink", "Subscription", "TreeFinding"]
