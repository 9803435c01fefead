"""How a node serves reads, in a module of its own: the controller takes the names (--read-mode)
from here without importing the node daemon."""

#: ReadIndex (a heartbeat round per batch of reads, linearizable), a lease (linearizable while
#: clocks drift less than the margin), or the node's own applied state (stale allowed).
READ_MODES = ("read-index", "lease", "local")
