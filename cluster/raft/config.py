"""Config: the knobs of one Raft node. Everything is in ticks: the core has no clock."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ConfigError

READ_ONLY_SAFE = "safe"  # ReadIndex: confirm leadership with a heartbeat round per read batch
READ_ONLY_LEASE = "lease"  # lease: trust a quorum heard recently (needs bounded clock drift)


@dataclass(frozen=True)
class Config:
    """Node configuration (etcd-io/raft's Config, trimmed to what this cluster uses).

    election_tick: a follower that hears nothing from a leader for a randomized timeout in
      [election_tick, 2*election_tick) ticks campaigns; a CheckQuorum leader steps down after
      election_tick ticks without hearing from a quorum.
    heartbeat_tick: a leader sends heartbeats every heartbeat_tick ticks (< election_tick).
    pre_vote: run a PreVote round before incrementing the term (a partitioned node rejoining cannot
      disrupt a healthy leader).
    check_quorum: the leader steps down when a quorum has not been active for an election timeout;
      followers that heard from a leader within the election timeout ignore votes (the lease).
    read_only: "safe" (ReadIndex with a heartbeat round) or "lease" (needs check_quorum).
    lease_margin_ticks: how much shorter the leader's read lease is than the minimum election
      timeout, the clock-drift bound. The lease lasts election_tick - lease_margin_ticks ticks from
      the send of the heartbeat round a quorum acknowledged. This single number is where a
      lease-without-drift-bound bug would live.
    max_inflight_msgs: MsgApp messages a replicating leader keeps in flight per peer.
    max_batch_entries: at most this many entries per MsgApp.
    max_uncommitted_entries: a leader refuses proposals beyond this many uncommitted entries
      (0: unlimited). Bounds memory when a quorum is down.
    applied: the index already applied by the state machine at restart (committed entries up to it
      are not handed out again).
    seed: seeds the node's own RNG for the randomized election timeout (no global random).
    """

    election_tick: int = 10
    heartbeat_tick: int = 1
    pre_vote: bool = True
    check_quorum: bool = True
    read_only: str = READ_ONLY_SAFE
    lease_margin_ticks: int = 2
    max_inflight_msgs: int = 256
    max_batch_entries: int = 64
    max_uncommitted_entries: int = 0
    applied: int = 0
    seed: int = 0

    def validate(self) -> None:
        if self.heartbeat_tick <= 0:
            raise ConfigError("heartbeat_tick must be greater than 0")
        if self.election_tick <= self.heartbeat_tick:
            raise ConfigError("election_tick must be greater than heartbeat_tick")
        if self.read_only not in (READ_ONLY_SAFE, READ_ONLY_LEASE):
            raise ConfigError(f"read_only must be 'safe' or 'lease', got {self.read_only!r}")
        if self.read_only == READ_ONLY_LEASE and not self.check_quorum:
            raise ConfigError("read_only='lease' requires check_quorum (the lease is what it enforces)")
        if not 0 <= self.lease_margin_ticks < self.election_tick:
            raise ConfigError("lease_margin_ticks must be in [0, election_tick)")
        if self.max_inflight_msgs <= 0:
            raise ConfigError("max_inflight_msgs must be greater than 0")
        if self.max_batch_entries <= 0:
            raise ConfigError("max_batch_entries must be greater than 0")
        if self.max_uncommitted_entries < 0 or self.applied < 0:
            raise ConfigError("max_uncommitted_entries and applied must be non-negative")
