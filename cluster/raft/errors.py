"""Errors the Raft core raises to its caller (the edges). Each one is a definite, expected outcome."""

from __future__ import annotations


class RaftError(Exception):
    """Base class of every error the core raises."""


class ProposalDropped(RaftError):
    """The proposal was not accepted: no known leader, a leader transfer in flight, or not a voter.

    Definite: the entry is not in any log, so the client may retry elsewhere.
    """


class CompactedError(RaftError):
    """The requested index precedes the first index still in storage (it is inside the snapshot)."""


class UnavailableError(RaftError):
    """The requested index is past the last index in storage."""


class SnapOutOfDateError(RaftError):
    """A snapshot older than the one already stored was offered."""


class ConfigError(RaftError, ValueError):
    """The Config or the peer list given to RawNode is invalid."""


class StepLocalMessageError(RaftError):
    """A node-local message type (MsgHup, MsgBeat, ...) arrived through step() from the network."""


class InvalidMessageError(RaftError):
    """A well-formed message that breaks the protocol (e.g. non-contiguous entries): refused whole,
    before it changes any state, so a faulty peer cannot corrupt this node's log."""
